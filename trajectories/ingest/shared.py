"""What every input shape's reader shares: the normalized step's vocabulary,
the error every reader raises, the step builder and the small text helpers
(JSON text, content parts, placeholders, tool names)."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

KINDS = ("system", "user", "thought", "action", "tool_call", "observation", "tool_result", "answer", "refinement")
# duration_ms: how long the step took (OTLP spans carry it; trajectories.otlp sets it).
OPTIONAL_KEYS = {"name": str, "arguments": str, "call_id": str, "is_error": bool, "duration_ms": int}
MAX_STEP_CONTENT_CHARS = 200_000

STEPS = "steps"
OPENAI = "openai"
ANTHROPIC = "anthropic"
OPENAI_RESPONSES = "openai_responses"
LANGCHAIN = "langchain"

SHAPES_HELP = (
    "accepted 'messages' shapes: OpenAI chat-completions or Anthropic messages (each with a 'role'), "
    "OpenAI Responses items (to_input_list(): 'role' or 'type' such as 'function_call'), "
    "LangChain messages ('type' human/ai/tool/system, from messages_to_dict, model_dump or dumpd)"
)

# Control characters (C0, DEL, C1: newlines and tabs among them) and the Unicode line and
# paragraph separators: a tool name is one line of text, and prompts show it as a step label.
_NOT_IN_A_NAME = {"Cc", "Zl", "Zp"}


class NormalizeError(ValueError):
    """The input cannot be normalized; ``loc`` says where (``messages[3].content``)."""

    def __init__(self, loc: str, message: str):
        self.loc = loc
        self.message = message
        super().__init__(f"{loc}: {message}" if loc else message)


class Builder:
    """Collects steps, numbering them, and remembers tool names by call id so
    a tool result can say which tool produced it."""

    def __init__(self):
        self.steps: list[dict] = []
        self.tool_names: dict[str, str] = {}

    def add(self, kind: str, content: str, **optional) -> dict:
        step = {"index": len(self.steps), "kind": kind, "content": content}
        for key, value in optional.items():
            if value is not None:
                step[key] = value
        if kind == "tool_call" and step.get("call_id") and step.get("name"):
            self.tool_names[step["call_id"]] = step["name"]
        self.steps.append(step)
        return step


def name_problem(name: str) -> str:
    """Why ``name`` cannot be a tool name ("" when it can): it holds a
    control character or a line break."""
    for position, char in enumerate(name):
        if unicodedata.category(char) in _NOT_IN_A_NAME:
            return f"must not contain control characters or line breaks (found {char!r} at position {position})"
    return ""


def tool_name(value: Any, loc: str, *, required: bool = True) -> str | None:
    """A tool name as sent at ``loc``: a non-empty single-line string (or None
    when not ``required`` and absent). Raises NormalizeError otherwise."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise NormalizeError(
            loc, "must be a non-empty string" if required else f"must be a string, got {type_name(value)}"
        )
    problem = name_problem(value)
    if problem:
        raise NormalizeError(loc, problem)
    return value


def json_text(value: Any, loc: str) -> str:
    """Tool arguments and structured observations become JSON text. A string is
    kept as sent (models do emit invalid JSON; it is evidence, not noise)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise NormalizeError(loc, f"cannot be written as JSON ({exc.__class__.__name__})") from None


def optional_str(value: Any, loc: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise NormalizeError(loc, f"must be a string, got {type_name(value)}")


def type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def placeholder(kind: str, block: dict) -> str:
    """What stands in for a non-text part (image, file, audio…), so its place stays visible."""
    if kind == "image_url":
        url = (block.get("image_url") or {}).get("url", "") if isinstance(block.get("image_url"), dict) else ""
        return "[image]" if not url or url.startswith("data:") else f"[image: {url[:500]}]"
    if kind == "file":
        name = (block.get("file") or {}).get("filename", "") if isinstance(block.get("file"), dict) else ""
        return f"[file: {name}]" if name else "[file]"
    if kind == "document":
        title = block.get("title") if isinstance(block.get("title"), str) else ""
        return f"[document: {title}]" if title else "[document]"
    if kind == "input_image":
        url = block.get("image_url") if isinstance(block.get("image_url"), str) else ""
        return "[image]" if not url or url.startswith("data:") else f"[image: {url[:500]}]"
    if kind == "input_file":
        name = block.get("filename") if isinstance(block.get("filename"), str) else ""
        return f"[file: {name}]" if name else "[file]"
    if kind == "input_audio":
        return "[audio]"
    return f"[{kind}]"


def text_parts(parts: list, loc: str) -> str:
    """Text of a list of content parts/blocks, as both OpenAI and Anthropic
    send them: plain strings, text parts (``text``, ``input_text``,
    ``output_text``), refusals, and a marked placeholder for anything else
    (images, audio…), joined by newlines."""
    texts = []
    for j, part in enumerate(parts):
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise NormalizeError(f"{loc}[{j}]", f"must be a content part object with a 'type', got {type_name(part)}")
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            text = part.get("text")
            if not isinstance(text, str):
                raise NormalizeError(f"{loc}[{j}].text", "must be a string")
            texts.append(text)
        elif kind == "refusal":
            texts.append(optional_str(part.get("refusal"), f"{loc}[{j}].refusal") or "")
        elif isinstance(kind, str):
            texts.append(placeholder(kind, part))
        else:
            raise NormalizeError(f"{loc}[{j}].type", "is missing")
    return "\n".join(texts)


def message_text(content: Any, loc: str) -> str:
    """A message's content sent as a string, null or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise NormalizeError(loc, f"must be a string, null or a list of parts, got {type_name(content)}")
    return text_parts(content, loc)


def objects(items: list, name: str):
    """``(index, location, item)`` for each entry of ``items``; an entry that
    is not an object is refused by its location (``messages[3]``)."""
    for i, item in enumerate(items):
        loc = f"{name}[{i}]"
        if not isinstance(item, dict):
            raise NormalizeError(loc, f"must be an object, got {type_name(item)}")
        yield i, loc, item


def system_text(system: Any) -> str:
    """The ``system`` prompt sent apart from the messages: a string or text blocks."""
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return text_parts(system, "system")
    raise NormalizeError("system", f"must be a string or a list of text blocks, got {type_name(system)}")


def builder_with(system: Any) -> Builder:
    """A step builder that starts with the ``system`` prompt when one was sent."""
    builder = Builder()
    if system is not None:
        builder.add("system", system_text(system))
    return builder


def check_steps(steps: list[dict]) -> None:
    """The limits every normalized step keeps, whatever shape it came from:
    content and arguments within MAX_STEP_CONTENT_CHARS, a single-line name."""
    for step in steps:
        where = f"step {step['index']} ({step['kind']})"
        for key in ("content", "arguments"):
            value = step.get(key)
            if value is not None and len(value) > MAX_STEP_CONTENT_CHARS:
                raise NormalizeError(
                    f"{where}.{key}",
                    f"is {len(value)} characters; the limit is {MAX_STEP_CONTENT_CHARS} per step. Trim long observations.",
                )
        problem = name_problem(step.get("name") or "")
        if problem:
            raise NormalizeError(f"{where}.name", problem)
