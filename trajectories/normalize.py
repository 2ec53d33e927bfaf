"""Turn what agents send into the one step shape everything else reads.

Accepted shapes, detected automatically:

* native ``steps``: each item either ``{"thought", "action", "observation"}``
  (+ ``tool``/``arguments``, ``error``/``is_error``, ``refinement``) or a step
  already in the normalized shape (``{"kind", "content", ...}``);
* OpenAI chat-completions ``messages`` (system/developer/user/assistant/tool,
  assistant ``tool_calls``, legacy ``function_call``, content as a string, null
  or a list of parts);
* Anthropic ``messages`` (content as a string or blocks: ``text``, ``thinking``,
  ``tool_use``, ``tool_result``…), with the top-level ``system`` sent apart;
* OpenAI Responses API items, as the OpenAI Agents SDK's
  ``RunResult.to_input_list()`` returns them (``message``, ``reasoning``,
  ``function_call`` / ``function_call_output``, built-in tool calls such as
  ``web_search_call``, ``file_search_call``, ``computer_call``,
  ``code_interpreter_call``, ``mcp_call``… and their ``*_output`` items);
* LangChain messages, serialized by ``messages_to_dict`` (``{"type": "ai",
  "data": {...}}``), by ``message.model_dump()`` (``"type"`` at top level) or by
  ``langchain_core.load.dumpd`` (``{"lc": 1, "type": "constructor", ...}``):
  ``human`` / ``ai`` (``tool_calls``, ``invalid_tool_calls``, reasoning) /
  ``tool`` (``status="error"`` flags the result) / ``system`` messages.

A normalized step is a flat dict::

    {"index": 0, "kind": "tool_call", "content": "...",
     # optional:
     "name": "search", "arguments": "{\\"q\\": \\"x\\"}", "call_id": "call_1", "is_error": True,
     "duration_ms": 840}  # how long the step took, when the source knows (OTLP spans)

``index`` counts from 0. ``kind`` is one of :data:`KINDS`. Every thought,
action, tool call (name + arguments as JSON text) and observation is kept;
non-text parts (images, files) leave a short placeholder so their place in the
conversation stays visible. Assistant text next to tool calls is a ``thought``;
assistant text without tool calls is an ``action`` (what the agent said or
did). For messages shapes, :func:`inferred_final_answer` reads the agent's last
word (its last ``action``, when no tool call, tool result or user turn comes
after it) as the final answer when the agent sent none.

Errors raise :class:`NormalizeError` with the location of the offending item.
"""

from __future__ import annotations

import json
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
# Responses API item types that are neither tool calls (``*_call``) nor their
# outputs (``*_output``); those two families are recognised by their suffix.
_RESPONSES_ITEM_TYPES = {"message", "reasoning", "item_reference", "compaction", "additional_tools"}
_RESPONSES_PARTS = {"input_text", "output_text", "input_image", "input_file"}
_RESPONSES_ROLES = {"user", "assistant", "system", "developer"}
# LangChain message types, as ``message.type`` and as the class name ``dumpd`` records.
_LANGCHAIN_TYPES = {"human", "ai", "tool", "system", "function", "chat", "remove"}
_LANGCHAIN_CLASSES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "ToolMessage": "tool",
    "SystemMessage": "system",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
    "RemoveMessage": "remove",
}
_LANGCHAIN_CLASSES.update({f"{name}Chunk": kind for name, kind in list(_LANGCHAIN_CLASSES.items())})
_SHAPES_HELP = (
    "accepted 'messages' shapes: OpenAI chat-completions or Anthropic messages (each with a 'role'), "
    "OpenAI Responses items (to_input_list(): 'role' or 'type' such as 'function_call'), "
    "LangChain messages ('type' human/ai/tool/system, from messages_to_dict, model_dump or dumpd)"
)


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
        normalizer = {
            OPENAI: normalize_openai,
            ANTHROPIC: normalize_anthropic,
            OPENAI_RESPONSES: normalize_responses,
            LANGCHAIN: normalize_langchain,
        }[input_format]
        result = normalizer(messages, system=system)
    if not result:
        raise NormalizeError("steps" if steps is not None else "messages", "contains no steps with content")
    _check_sizes(result)
    return result, input_format


def inferred_final_answer(steps: list[dict], input_format: str) -> str:
    """The final answer a messages trajectory implies: the text of its last
    ``action`` step (assistant text without tool calls) when no tool call, tool
    result, observation or user turn comes after it; ``""`` otherwise and
    always for native ``steps`` (there the agent says what its answer is)."""
    if input_format == STEPS:
        return ""
    for step in reversed(steps):
        if step["kind"] == "action":
            return step["content"].strip()
        if step["kind"] in ("tool_call", "tool_result", "observation", "user"):
            return ""
    return ""


def _langchain_kind(message: dict) -> str | None:
    """The LangChain message type of one serialized message, or None."""
    if message.get("lc") == 1 and message.get("type") == "constructor":
        ids = message.get("id")
        return _LANGCHAIN_CLASSES.get(ids[-1]) if isinstance(ids, list) and ids else None
    kind = message.get("type")
    if not isinstance(kind, str):
        return None
    return kind if kind in _LANGCHAIN_TYPES else _LANGCHAIN_CLASSES.get(kind)


def _is_responses_item(message: dict) -> bool:
    kind = message.get("type")
    return isinstance(kind, str) and (
        kind in _RESPONSES_ITEM_TYPES or kind.endswith(("_call", "_output")) or kind.startswith("mcp_")
    )


def _responses_parts_in(message: dict) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") in _RESPONSES_PARTS for part in content
    )


def detect_message_format(messages: list, *, system: Any = None) -> str:
    """``openai``, ``anthropic``, ``openai_responses`` or ``langchain`` from the
    conventions the messages use. Items with a LangChain ``type`` (or ``lc``
    envelope) make it LangChain; items with a Responses ``type`` make it
    Responses. A plain text conversation reads the same in OpenAI chat,
    Anthropic and Responses: it counts as OpenAI unless a separate ``system``
    field marks it as Anthropic."""
    if not isinstance(messages, list):
        raise NormalizeError("messages", "must be a list of messages")
    openai_hint = anthropic_hint = responses_hint = langchain_hint = system_role_hint = None
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise NormalizeError(f"messages[{i}]", f"must be an object; {_SHAPES_HELP}")
        if _langchain_kind(message):
            langchain_hint = langchain_hint or f"messages[{i}] (LangChain type '{_langchain_kind(message)}')"
            continue
        if _is_responses_item(message) and (message["type"] != "message" or _responses_parts_in(message)):
            # Anthropic's own Message objects also say "type": "message": a message item counts as
            # Responses by its parts (output_text…); otherwise its role and blocks decide below.
            responses_hint = responses_hint or f"messages[{i}] (Responses item type '{message['type']}')"
            continue
        role = message.get("role")
        if role in ("system", "developer"):
            system_role_hint = system_role_hint or f"messages[{i}] (role '{role}')"
        if (
            role in ("tool", "function")
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
    if langchain_hint:
        other = responses_hint or openai_hint or anthropic_hint
        if other:
            raise NormalizeError(
                "messages",
                f"mixes LangChain messages ({langchain_hint}) with another format ({other}); send one format",
            )
        return LANGCHAIN
    if responses_hint:
        other = openai_hint or anthropic_hint
        if other:
            raise NormalizeError(
                "messages",
                f"mixes OpenAI Responses items ({responses_hint}) with chat-completions or Anthropic messages "
                f"({other}); send one format",
            )
        return OPENAI_RESPONSES
    openai_hint = openai_hint or system_role_hint
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
    if kind == "input_image":
        url = block.get("image_url") if isinstance(block.get("image_url"), str) else ""
        return "[image]" if not url or url.startswith("data:") else f"[image: {url[:500]}]"
    if kind == "input_file":
        name = block.get("filename") if isinstance(block.get("filename"), str) else ""
        return f"[file: {name}]" if name else "[file]"
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
    for _, loc, raw in _objects(steps, "steps"):
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


def _objects(items: list, name: str):
    """``(index, location, item)`` for each entry of ``items``; an entry that
    is not an object is refused by its location (``messages[3]``)."""
    for i, item in enumerate(items):
        loc = f"{name}[{i}]"
        if not isinstance(item, dict):
            raise NormalizeError(loc, f"must be an object, got {_type_name(item)}")
        yield i, loc, item


def _builder_with(system: Any) -> _Builder:
    """A step builder that starts with the ``system`` prompt when one was sent."""
    builder = _Builder()
    if system is not None:
        builder.add("system", _anthropic_system(system))
    return builder


def normalize_openai(messages: list, *, system: Any = None) -> list[dict]:
    """OpenAI chat-completions messages (and the legacy ``function_call``)."""
    builder = _builder_with(system)
    for _, loc, message in _objects(messages, "messages"):
        role = message.get("role")
        if role not in _OPENAI_ROLES:
            raise NormalizeError(
                f"{loc}.role", f"must be one of {sorted(_OPENAI_ROLES)}, got {role!r} ({_SHAPES_HELP})"
            )
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
    builder = _builder_with(system)
    for _, loc, message in _objects(messages, "messages"):
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


# --- OpenAI Responses items (OpenAI Agents SDK) -------------------------------------------

# Fields of a built-in tool call item that are its result or bookkeeping, not its arguments.
_BUILTIN_NOT_ARGUMENTS = {
    "id",
    "type",
    "status",
    "call_id",
    "results",
    "outputs",
    "result",
    "output",
    "error",
    "pending_safety_checks",
    "created_by",
    "caller",
}


def _responses_output(output: Any, loc: str) -> str:
    """A tool output as the Responses API carries it: text, a list of input
    parts, a screenshot, or any other JSON."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(part, (str, dict)) for part in output):
        return _text_parts(output, loc)
    if isinstance(output, dict) and output.get("type") == "computer_screenshot":
        return "[screenshot]"
    return _json_text(output, loc)


def _responses_error(error: Any, loc: str) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return _json_text(error, loc)


def _responses_calls_follow(items: list, i: int) -> bool:
    """Whether the model turn of ``items[i]`` (an assistant message) goes on to
    call a tool: its text is then a thought, not the agent's answer."""
    for item in items[i + 1 :]:
        if not isinstance(item, dict):
            return False
        kind = item.get("type")
        if kind == "reasoning" or (kind in (None, "message") and item.get("role") == "assistant"):
            continue
        return isinstance(kind, str) and (kind.endswith("_call") or kind == "mcp_approval_request")
    return False


def normalize_responses(messages: list, *, system: Any = None) -> list[dict]:
    """OpenAI Responses API input items, e.g. ``RunResult.to_input_list()``."""
    builder = _builder_with(system)
    for i, loc, item in _objects(messages, "messages"):
        kind = item.get("type")
        if kind is None or kind == "message":
            _responses_message(builder, messages, i, loc)
        elif not isinstance(kind, str):
            raise NormalizeError(f"{loc}.type", f"must be a string, got {_type_name(kind)}")
        elif kind == "reasoning":
            texts = []
            for key in ("summary", "content"):
                parts = item.get(key) or []
                if not isinstance(parts, list):
                    raise NormalizeError(f"{loc}.{key}", "must be a list of text parts")
                for j, part in enumerate(parts):
                    text = part.get("text") if isinstance(part, dict) else None
                    if not isinstance(text, str):
                        raise NormalizeError(f"{loc}.{key}[{j}].text", "must be a string")
                    texts.append(text)
            if texts:
                builder.add("thought", "\n".join(texts))
            elif item.get("encrypted_content"):
                builder.add("thought", "[encrypted reasoning]")
        elif kind in ("function_call", "custom_tool_call", "mcp_call", "mcp_approval_request"):
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise NormalizeError(f"{loc}.name", "must be a non-empty string")
            key = "input" if kind == "custom_tool_call" else "arguments"
            arguments = "{}" if item.get(key) is None else _json_text(item[key], f"{loc}.{key}")
            call_id = _optional_str(item.get("call_id") or item.get("id"), f"{loc}.call_id")
            builder.add(
                "tool_call",
                "",
                name=name,
                arguments=arguments,
                call_id=call_id,
                is_error=True if item.get("status") == "failed" else None,
            )
            if kind == "mcp_call":
                _responses_result(builder, item, name, call_id, loc)
        elif kind.endswith("_call"):
            name = kind.removesuffix("_call")
            arguments = {k: v for k, v in item.items() if k not in _BUILTIN_NOT_ARGUMENTS}
            call_id = _optional_str(item.get("call_id") or item.get("id"), f"{loc}.call_id")
            builder.add(
                "tool_call",
                "",
                name=name,
                arguments=_json_text(arguments, loc),
                call_id=call_id,
                is_error=True if item.get("status") == "failed" else None,
            )
            _responses_result(builder, item, name, call_id, loc)
        elif kind.endswith("_output"):
            call_id = _optional_str(item.get("call_id"), f"{loc}.call_id")
            builder.add(
                "tool_result",
                _responses_output(item.get("output"), f"{loc}.output"),
                name=builder.tool_names.get(call_id or ""),
                call_id=call_id,
                is_error=True if item.get("status") == "failed" else None,
            )
        else:
            # An item type newer than this code (mcp_list_tools, item_reference…): keep it, as JSON.
            builder.add("observation", _json_text(item, loc), name=kind)
    return builder.steps


def _responses_message(builder: _Builder, items: list, i: int, loc: str) -> None:
    item = items[i]
    role = item.get("role")
    if role not in _RESPONSES_ROLES:
        raise NormalizeError(f"{loc}.role", f"must be one of {sorted(_RESPONSES_ROLES)}, got {role!r}")
    text = _openai_text(item.get("content"), f"{loc}.content")
    if role in ("system", "developer"):
        builder.add("system", text)
    elif role == "user":
        builder.add("user", text)
    elif text:
        builder.add("thought" if _responses_calls_follow(items, i) else "action", text)


def _responses_result(builder: _Builder, item: dict, name: str, call_id: str | None, loc: str) -> None:
    """The result a built-in tool call item carries inside itself, if any."""
    parts = []
    if item.get("results") is not None:  # file_search_call
        parts.append(_json_text(item["results"], f"{loc}.results"))
    outputs = item.get("outputs")
    if isinstance(outputs, list):  # code_interpreter_call
        for output in outputs:
            if isinstance(output, dict) and output.get("type") == "logs":
                parts.append(str(output.get("logs", "")))
            elif isinstance(output, dict) and output.get("type") == "image":
                parts.append(_placeholder("input_image", {"image_url": output.get("url")}))
            else:
                parts.append(_json_text(output, f"{loc}.outputs"))
    if isinstance(item.get("result"), str) and item["result"]:  # image_generation_call: base64 image
        parts.append("[image]")
    if item.get("output") is not None:  # mcp_call
        parts.append(_responses_output(item["output"], f"{loc}.output"))
    if parts:
        builder.add("tool_result", "\n".join(parts), name=name, call_id=call_id)
    if item.get("error") is not None:
        builder.add(
            "tool_result", _responses_error(item["error"], f"{loc}.error"), name=name, call_id=call_id, is_error=True
        )


# --- LangChain messages --------------------------------------------------------------------


def _langchain_fields(message: dict) -> tuple[str | None, dict]:
    """(message type, its fields) of the three serialized forms."""
    kind = _langchain_kind(message)
    if message.get("lc") == 1 and message.get("type") == "constructor":
        fields = message.get("kwargs")
    elif isinstance(message.get("data"), dict) and set(message) <= {"type", "data"}:
        fields = message["data"]
    else:
        fields = message
    return kind, fields if isinstance(fields, dict) else {}


def normalize_langchain(messages: list, *, system: Any = None) -> list[dict]:
    """Serialized LangChain messages (``messages_to_dict``, ``model_dump`` or ``dumpd``)."""
    builder = _builder_with(system)
    for _, loc, message in _objects(messages, "messages"):
        kind, fields = _langchain_fields(message)
        if kind is None:
            raise NormalizeError(
                f"{loc}.type", f"must be a LangChain message type {sorted(_LANGCHAIN_TYPES)} like the other messages"
            )
        if kind == "chat":  # ChatMessage: an arbitrary role
            role = fields.get("role")
            kind = {"assistant": "ai", "ai": "ai", "system": "system", "tool": "tool"}.get(role, "human")
        content = fields.get("content")
        if kind == "ai":
            _langchain_ai(builder, fields, f"{loc}.content")
        elif kind == "remove":
            continue
        elif kind in ("tool", "function"):
            text = _openai_text(content, f"{loc}.content")
            call_id = _optional_str(fields.get("tool_call_id"), f"{loc}.tool_call_id")
            name = _optional_str(fields.get("name"), f"{loc}.name") or builder.tool_names.get(call_id or "")
            builder.add(
                "tool_result",
                text,
                name=name,
                call_id=call_id,
                is_error=True if fields.get("status") == "error" else None,
            )
        else:
            builder.add("system" if kind == "system" else "user", _openai_text(content, f"{loc}.content"))
    return builder.steps


def _langchain_reasoning(extra: Any) -> list[str]:
    """Reasoning providers put in ``additional_kwargs``: DeepSeek-style
    ``reasoning_content`` text, OpenAI ``reasoning`` with summary parts."""
    if not isinstance(extra, dict):
        return []
    texts = []
    if isinstance(extra.get("reasoning_content"), str) and extra["reasoning_content"]:
        texts.append(extra["reasoning_content"])
    reasoning = extra.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        texts.append(reasoning)
    elif isinstance(reasoning, dict):
        summary = [p.get("text") for p in reasoning.get("summary") or [] if isinstance(p, dict)]
        if any(isinstance(t, str) and t for t in summary):
            texts.append("\n".join(t for t in summary if isinstance(t, str)))
    return texts


def _langchain_ai(builder: _Builder, fields: dict, loc: str) -> None:
    calls = fields.get("tool_calls") or []
    invalid = fields.get("invalid_tool_calls") or []
    extra = fields.get("additional_kwargs")
    if not calls and isinstance(extra, dict) and isinstance(extra.get("tool_calls"), list):
        # Older serializations keep only the provider's (OpenAI) tool calls.
        calls = [
            {
                "name": (c.get("function") or {}).get("name"),
                "args": (c.get("function") or {}).get("arguments"),
                "id": c.get("id"),
            }
            for c in extra["tool_calls"]
            if isinstance(c, dict)
        ]
    if not isinstance(calls, list) or not isinstance(invalid, list):
        raise NormalizeError(loc.removesuffix(".content") + ".tool_calls", "must be a list")
    text_kind = "thought" if (calls or invalid) else "action"
    for reasoning in _langchain_reasoning(extra):
        builder.add("thought", reasoning)

    content = fields.get("content")
    if isinstance(content, list):
        pending: list[str] = []

        def flush():
            if pending:
                builder.add(text_kind, "\n".join(pending))
                pending.clear()

        for j, block in enumerate(content):
            bloc = f"{loc}[{j}]"
            kind = block.get("type") if isinstance(block, dict) else None
            if isinstance(block, str):
                pending.append(block)
            elif kind in ("text", "output_text"):
                pending.append(_text_parts([block], loc))
            elif kind in ("thinking", "reasoning"):
                flush()
                text = block.get(kind)
                if not isinstance(text, str):
                    summary = [p.get("text") for p in block.get("summary") or [] if isinstance(p, dict)]
                    text = "\n".join(t for t in summary if isinstance(t, str))
                if text:
                    builder.add("thought", text)
            elif kind == "redacted_thinking":
                flush()
                builder.add("thought", "[redacted thinking]")
            elif kind in ("tool_use", "tool_call", "function_call", "server_tool_use"):
                if not calls and not invalid:  # the message's tool_calls are authoritative
                    flush()
                    name = block.get("name")
                    if not isinstance(name, str) or not name:
                        raise NormalizeError(f"{bloc}.name", "must be a non-empty string")
                    arguments = block.get("input", block.get("args", block.get("arguments")))
                    builder.add(
                        "tool_call",
                        "",
                        name=name,
                        arguments="{}" if arguments is None else _json_text(arguments, bloc),
                        call_id=_optional_str(block.get("id") or block.get("call_id"), f"{bloc}.id"),
                    )
            elif isinstance(kind, str):
                pending.append(_placeholder(kind, block))
            else:
                raise NormalizeError(f"{bloc}.type", "is missing")
        flush()
    else:
        text = _openai_text(content, loc)
        if text:
            builder.add(text_kind, text)

    cloc = loc.removesuffix(".content")
    for j, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            raise NormalizeError(f"{cloc}.tool_calls[{j}].name", "must be a non-empty string")
        args = call.get("args")
        builder.add(
            "tool_call",
            "",
            name=call["name"],
            arguments="{}" if args is None else _json_text(args, f"{cloc}.tool_calls[{j}].args"),
            call_id=_optional_str(call.get("id"), f"{cloc}.tool_calls[{j}].id"),
        )
    for j, call in enumerate(invalid):
        if not isinstance(call, dict):
            raise NormalizeError(f"{cloc}.invalid_tool_calls[{j}]", f"must be an object, got {_type_name(call)}")
        args = call.get("args")
        error = call.get("error")
        builder.add(
            "tool_call",
            error if isinstance(error, str) else "",
            name=call.get("name") if isinstance(call.get("name"), str) and call.get("name") else "[invalid tool call]",
            arguments="" if args is None else _json_text(args, f"{cloc}.invalid_tool_calls[{j}].args"),
            call_id=_optional_str(call.get("id"), f"{cloc}.invalid_tool_calls[{j}].id"),
            is_error=True,
        )
