"""Turn what agents send into the one step shape everything else reads.

Accepted shapes, detected automatically:

* native ``steps``: each item either ``{"thought", "action", "observation"}``
  (+ ``tool``/``arguments``, ``error``/``is_error``, ``refinement``) or a step
  already in the normalized shape (``{"kind", "content", ...}``);
* OpenAI chat-completions ``messages`` (system/developer/user/assistant/tool,
  assistant ``tool_calls``, legacy ``function_call``, content as a string, null
  or a list of parts);
* Anthropic ``messages`` (content as a string or blocks: ``text``, ``thinking``,
  ``tool_use``, ``tool_result``…), with the top-level ``system`` sent apart.

A normalized step is a flat dict::

    {"index": 0, "kind": "tool_call", "content": "...",
     # optional:
     "name": "search", "arguments": "{\\"q\\": \\"x\\"}", "call_id": "call_1", "is_error": True}

``index`` counts from 0. ``kind`` is one of :data:`KINDS`. Every thought,
action, tool call (name + arguments as JSON text) and observation is kept;
non-text parts (images, files) leave a short placeholder so their place in the
conversation stays visible. Assistant text next to tool calls is a ``thought``;
assistant text without tool calls is an ``action`` (what the agent said or
did) — the final answer is never guessed from it.

Errors raise :class:`NormalizeError` with the location of the offending item.
"""

from __future__ import annotations

import json
from typing import Any

KINDS = ("system", "user", "thought", "action", "tool_call", "observation", "tool_result", "answer", "refinement")
OPTIONAL_KEYS = {"name": str, "arguments": str, "call_id": str, "is_error": bool}
MAX_STEP_CONTENT_CHARS = 200_000

STEPS = "steps"
OPENAI = "openai"
ANTHROPIC = "anthropic"

_TRIPLE_KEYS = {"thought", "action", "observation", "tool", "arguments", "call_id", "error", "is_error", "refinement"}
_NORMALIZED_KEYS = {"index", "kind", "content", *OPTIONAL_KEYS}
_OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
_ANTHROPIC_ONLY_BLOCKS = {
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "document",
}
_OPENAI_ONLY_PARTS = {"image_url", "input_audio", "refusal", "file"}


class NormalizeError(ValueError):
    """The input cannot be normalized; ``loc`` says where (``messages[3].content``)."""

    def __init__(self, loc: str, message: str):
        self.loc = loc
        self.message = message
        super().__init__(f"{loc}: {message}" if loc else message)


# --- entry point --------------------------------------------------------------------


def normalize_trajectory(
    *, steps: list | None = None, messages: list | None = None, system: Any = None
) -> tuple[list[dict], str]:
    """Return ``(normalized steps, input_format)``. Exactly one of ``steps``
    and ``messages`` must be given; ``system`` goes with ``messages`` only."""
    if (steps is None) == (messages is None):
        raise NormalizeError("", "send exactly one of 'steps' or 'messages'")
    if steps is not None:
        if system is not None:
            raise NormalizeError("system", "'system' is only used together with 'messages'")
        result, input_format = normalize_steps(steps), STEPS
    else:
        input_format = detect_message_format(messages, system=system)
        if input_format == OPENAI:
            result = normalize_openai(messages, system=system)
        else:
            result = normalize_anthropic(messages, system=system)
    if not result:
        raise NormalizeError("steps" if steps is not None else "messages", "contains no steps with content")
    _check_sizes(result)
    return result, input_format


def detect_message_format(messages: list, *, system: Any = None) -> str:
    """``openai`` or ``anthropic`` from the conventions the messages use.
    A plain text conversation reads the same in both: it counts as OpenAI
    unless a separate ``system`` field marks it as Anthropic."""
    if not isinstance(messages, list):
        raise NormalizeError("messages", "must be a list of messages")
    openai_hint = anthropic_hint = None
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise NormalizeError(f"messages[{i}]", "must be an object with 'role' and 'content'")
        role = message.get("role")
        if (
            role in ("system", "developer", "tool", "function")
            or "tool_calls" in message
            or "tool_call_id" in message
            or "function_call" in message
        ):
            openai_hint = openai_hint or f"messages[{i}] (role '{role}')"
        content = message.get("content")
        if isinstance(content, list):
            for j, block in enumerate(content):
                kind = block.get("type") if isinstance(block, dict) else None
                if kind in _ANTHROPIC_ONLY_BLOCKS:
                    anthropic_hint = anthropic_hint or f"messages[{i}].content[{j}] (type '{kind}')"
                elif kind in _OPENAI_ONLY_PARTS:
                    openai_hint = openai_hint or f"messages[{i}].content[{j}] (type '{kind}')"
    if openai_hint and anthropic_hint:
        raise NormalizeError(
            "messages",
            f"mixes OpenAI conventions ({openai_hint}) with Anthropic ones ({anthropic_hint}); send one format",
        )
    if anthropic_hint:
        return ANTHROPIC
    if openai_hint:
        return OPENAI
    return ANTHROPIC if system is not None else OPENAI


# --- helpers --------------------------------------------------------------------------


class _Builder:
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


def _json_text(value: Any, loc: str) -> str:
    """Tool arguments and structured observations become JSON text. A string is
    kept as sent (models do emit invalid JSON; it is evidence, not noise)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise NormalizeError(loc, f"cannot be written as JSON ({exc.__class__.__name__})") from None


def _optional_str(value: Any, loc: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise NormalizeError(loc, f"must be a string, got {_type_name(value)}")


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def _placeholder(kind: str, block: dict) -> str:
    if kind == "image_url":
        url = (block.get("image_url") or {}).get("url", "") if isinstance(block.get("image_url"), dict) else ""
        return "[image]" if not url or url.startswith("data:") else f"[image: {url[:500]}]"
    if kind == "file":
        name = (block.get("file") or {}).get("filename", "") if isinstance(block.get("file"), dict) else ""
        return f"[file: {name}]" if name else "[file]"
    if kind == "document":
        title = block.get("title") if isinstance(block.get("title"), str) else ""
        return f"[document: {title}]" if title else "[document]"
    if kind == "input_audio":
        return "[audio]"
    return f"[{kind}]"


def _check_sizes(steps: list[dict]) -> None:
    for step in steps:
        for key in ("content", "arguments"):
            value = step.get(key)
            if value is not None and len(value) > MAX_STEP_CONTENT_CHARS:
                raise NormalizeError(
                    f"step {step['index']} ({step['kind']}).{key}",
                    f"is {len(value)} characters; the limit is {MAX_STEP_CONTENT_CHARS} per step. Trim long observations.",
                )


# --- native steps --------------------------------------------------------------------


def normalize_steps(steps: list) -> list[dict]:
    """Native steps: thought/action/observation dicts or already-normalized
    ``{kind, content}`` dicts, in any mix."""
    if not isinstance(steps, list):
        raise NormalizeError("steps", "must be a list")
    builder = _Builder()
    for i, raw in enumerate(steps):
        loc = f"steps[{i}]"
        if not isinstance(raw, dict):
            raise NormalizeError(loc, f"must be an object, got {_type_name(raw)}")
        if "kind" in raw:
            _normalized_step(builder, raw, loc)
        else:
            _triple_step(builder, raw, loc)
    return builder.steps


def _normalized_step(builder: _Builder, raw: dict, loc: str) -> None:
    unknown = sorted(set(raw) - _NORMALIZED_KEYS)
    if unknown:
        raise NormalizeError(loc, f"unknown keys {unknown}; a step with 'kind' may have {sorted(_NORMALIZED_KEYS)}")
    kind = raw["kind"]
    if kind not in KINDS:
        raise NormalizeError(f"{loc}.kind", f"must be one of {list(KINDS)}, got {kind!r}")
    content = raw.get("content")
    if content is None:
        content = ""
    elif not isinstance(content, str):
        content = _json_text(content, f"{loc}.content")
    optional = {}
    for key, expected in OPTIONAL_KEYS.items():
        value = raw.get(key)
        if value is None:
            continue
        if key == "arguments" and not isinstance(value, str):
            value = _json_text(value, f"{loc}.arguments")
        if not isinstance(value, expected):
            raise NormalizeError(f"{loc}.{key}", f"must be a {expected.__name__}, got {_type_name(value)}")
        optional[key] = value
    if (
        kind in ("tool_result", "observation")
        and "name" not in optional
        and optional.get("call_id") in builder.tool_names
    ):
        optional["name"] = builder.tool_names[optional["call_id"]]
    builder.add(kind, content, **optional)


def _triple_step(builder: _Builder, raw: dict, loc: str) -> None:
    unknown = sorted(set(raw) - _TRIPLE_KEYS)
    if unknown:
        raise NormalizeError(
            loc, f"unknown keys {unknown}; a step has any of {sorted(_TRIPLE_KEYS)} (or 'kind' and 'content')"
        )
    if not any(raw.get(k) is not None for k in ("thought", "action", "observation", "tool", "error", "refinement")):
        raise NormalizeError(
            loc, "is empty: give at least one of thought, action, tool, observation, error, refinement"
        )

    thought = _optional_str(raw.get("thought"), f"{loc}.thought")
    if thought is not None:
        builder.add("thought", thought)

    tool = _optional_str(raw.get("tool"), f"{loc}.tool")
    action = raw.get("action")
    action_text = None if action is None else _json_text(action, f"{loc}.action")
    call_id = _optional_str(raw.get("call_id"), f"{loc}.call_id")
    if raw.get("arguments") is not None and tool is None:
        raise NormalizeError(f"{loc}.arguments", "given without 'tool' (the name of the tool called)")
    if tool is not None:
        arguments = _json_text(raw["arguments"], f"{loc}.arguments") if raw.get("arguments") is not None else "{}"
        builder.add("tool_call", action_text or "", name=tool, arguments=arguments, call_id=call_id)
    elif action_text is not None:
        builder.add("action", action_text)

    error = raw.get("error")
    is_error = raw.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise NormalizeError(f"{loc}.is_error", f"must be a boolean, got {_type_name(is_error)}")
    if error is not None and not isinstance(error, (str, bool)):
        raise NormalizeError(f"{loc}.error", f"must be a string (the error) or a boolean, got {_type_name(error)}")
    failed = bool(is_error) or error is True or (isinstance(error, str) and error != "")
    observation = raw.get("observation")
    parts = []
    if observation is not None:
        parts.append(_json_text(observation, f"{loc}.observation"))
    if isinstance(error, str) and error:
        parts.append(error if observation is None else f"Error: {error}")
    if parts or failed:
        builder.add("observation", "\n".join(parts), name=tool, call_id=call_id, is_error=True if failed else None)

    refinement = _optional_str(raw.get("refinement"), f"{loc}.refinement")
    if refinement is not None:
        builder.add("refinement", refinement)


# --- OpenAI chat completions -------------------------------------------------------


def _text_parts(parts: list, loc: str) -> str:
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
            raise NormalizeError(f"{loc}[{j}]", f"must be a content part object with a 'type', got {_type_name(part)}")
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text"):
            text = part.get("text")
            if not isinstance(text, str):
                raise NormalizeError(f"{loc}[{j}].text", "must be a string")
            texts.append(text)
        elif kind == "refusal":
            texts.append(_optional_str(part.get("refusal"), f"{loc}[{j}].refusal") or "")
        elif isinstance(kind, str):
            texts.append(_placeholder(kind, part))
        else:
            raise NormalizeError(f"{loc}[{j}].type", "is missing")
    return "\n".join(texts)


def _openai_text(content: Any, loc: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise NormalizeError(loc, f"must be a string, null or a list of parts, got {_type_name(content)}")
    return _text_parts(content, loc)


def normalize_openai(messages: list, *, system: Any = None) -> list[dict]:
    """OpenAI chat-completions messages (and the legacy ``function_call``)."""
    builder = _Builder()
    if system is not None:
        builder.add("system", _anthropic_system(system))
    for i, message in enumerate(messages):
        loc = f"messages[{i}]"
        if not isinstance(message, dict):
            raise NormalizeError(loc, f"must be an object, got {_type_name(message)}")
        role = message.get("role")
        if role not in _OPENAI_ROLES:
            raise NormalizeError(f"{loc}.role", f"must be one of {sorted(_OPENAI_ROLES)}, got {role!r}")
        text = _openai_text(message.get("content"), f"{loc}.content")
        if role in ("system", "developer"):
            builder.add("system", text)
        elif role == "user":
            builder.add("user", text)
        elif role in ("tool", "function"):
            call_id = _optional_str(message.get("tool_call_id"), f"{loc}.tool_call_id")
            name = _optional_str(message.get("name"), f"{loc}.name") or builder.tool_names.get(call_id or "")
            builder.add("tool_result", text, name=name, call_id=call_id)
        else:
            _openai_assistant(builder, message, text, loc)
    return builder.steps


def _openai_assistant(builder: _Builder, message: dict, text: str, loc: str) -> None:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise NormalizeError(f"{loc}.tool_calls", "must be a list")
    legacy = message.get("function_call")
    # Reasoning models served by vLLM/DeepSeek/OpenRouter return their thinking apart.
    for key in ("reasoning_content", "reasoning"):
        reasoning = message.get(key)
        if isinstance(reasoning, str) and reasoning:
            builder.add("thought", reasoning)
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        text = f"{text}\n{refusal}" if text else refusal
    if text:
        builder.add("thought" if (calls or legacy) else "action", text)
    for j, call in enumerate(calls):
        cloc = f"{loc}.tool_calls[{j}]"
        if not isinstance(call, dict):
            raise NormalizeError(cloc, f"must be an object, got {_type_name(call)}")
        call_id = _optional_str(call.get("id"), f"{cloc}.id")
        function = call.get("function")
        if function is None and isinstance(call.get("custom"), dict):  # custom (free-form) tools
            function = {"name": call["custom"].get("name"), "arguments": call["custom"].get("input", "")}
        if not isinstance(function, dict):
            raise NormalizeError(f"{cloc}.function", "must be an object with 'name' and 'arguments'")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise NormalizeError(f"{cloc}.function.name", "must be a non-empty string")
        arguments = function.get("arguments")
        arguments = "{}" if arguments is None else _json_text(arguments, f"{cloc}.function.arguments")
        builder.add("tool_call", "", name=name, arguments=arguments, call_id=call_id)
    if legacy is not None:
        if not isinstance(legacy, dict) or not isinstance(legacy.get("name"), str):
            raise NormalizeError(f"{loc}.function_call", "must be an object with 'name' and 'arguments'")
        arguments = legacy.get("arguments")
        arguments = "{}" if arguments is None else _json_text(arguments, f"{loc}.function_call.arguments")
        builder.add("tool_call", "", name=legacy["name"], arguments=arguments)


# --- Anthropic messages -------------------------------------------------------------


def _anthropic_system(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return _text_parts(system, "system")
    raise NormalizeError("system", f"must be a string or a list of text blocks, got {_type_name(system)}")


def normalize_anthropic(messages: list, *, system: Any = None) -> list[dict]:
    """Anthropic Messages API conversations (``system`` sent apart)."""
    builder = _Builder()
    if system is not None:
        builder.add("system", _anthropic_system(system))
    for i, message in enumerate(messages):
        loc = f"messages[{i}]"
        if not isinstance(message, dict):
            raise NormalizeError(loc, f"must be an object, got {_type_name(message)}")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise NormalizeError(f"{loc}.role", f"must be 'user' or 'assistant' in Anthropic messages, got {role!r}")
        content = message.get("content")
        text_kind = "user"
        if role == "assistant":
            uses_tools = isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use") for b in content
            )
            text_kind = "thought" if uses_tools else "action"
        if content is None:
            continue
        if isinstance(content, str):
            builder.add(text_kind, content)
            continue
        if not isinstance(content, list):
            raise NormalizeError(f"{loc}.content", f"must be a string or a list of blocks, got {_type_name(content)}")
        _anthropic_blocks(builder, content, text_kind, f"{loc}.content")
    return builder.steps


def _anthropic_blocks(builder: _Builder, blocks: list, text_kind: str, loc: str) -> None:
    pending: list[str] = []  # adjacent text blocks of one message read as one step

    def flush():
        if pending:
            builder.add(text_kind, "\n".join(pending))
            pending.clear()

    for j, block in enumerate(blocks):
        bloc = f"{loc}[{j}]"
        if isinstance(block, str):
            pending.append(block)
            continue
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise NormalizeError(bloc, "must be a content block with a 'type'")
        kind = block["type"]
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise NormalizeError(f"{bloc}.text", "must be a string")
            pending.append(text)
            continue
        if kind in ("image", "document", "search_result"):
            pending.append(_placeholder(kind, block))
            continue
        flush()
        if kind == "thinking":
            thinking = block.get("thinking")
            if not isinstance(thinking, str):
                raise NormalizeError(f"{bloc}.thinking", "must be a string")
            builder.add("thought", thinking)
        elif kind == "redacted_thinking":
            builder.add("thought", "[redacted thinking]")
        elif kind in ("tool_use", "server_tool_use"):
            name = block.get("name")
            if not isinstance(name, str) or not name:
                raise NormalizeError(f"{bloc}.name", "must be a non-empty string")
            arguments = _json_text(block.get("input", {}), f"{bloc}.input")
            builder.add(
                "tool_call", "", name=name, arguments=arguments, call_id=_optional_str(block.get("id"), f"{bloc}.id")
            )
        elif kind == "tool_result" or kind.endswith("_tool_result"):
            call_id = _optional_str(block.get("tool_use_id"), f"{bloc}.tool_use_id")
            result = block.get("content")
            if result is None:
                text = ""
            elif isinstance(result, str):
                text = result
            elif isinstance(result, list) and kind == "tool_result":
                text = _text_parts(result, f"{bloc}.content")
            else:
                text = _json_text(result, f"{bloc}.content")
            is_error = block.get("is_error")
            if is_error is not None and not isinstance(is_error, bool):
                raise NormalizeError(f"{bloc}.is_error", "must be a boolean")
            builder.add(
                "tool_result",
                text,
                name=builder.tool_names.get(call_id or ""),
                call_id=call_id,
                is_error=True if is_error else None,
            )
        else:
            # A block type newer than this code: keep it, as JSON, rather than lose it.
            builder.add(text_kind, _json_text(block, bloc))
    flush()
