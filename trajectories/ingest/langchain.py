"""LangChain messages, serialized by ``messages_to_dict`` (``{"type": "ai",
"data": {...}}``), by ``message.model_dump()`` (``"type"`` at top level) or by
``langchain_core.load.dumpd`` (``{"lc": 1, "type": "constructor", ...}``):
``human`` / ``ai`` (``tool_calls``, ``invalid_tool_calls``, reasoning) /
``tool`` (``status="error"`` flags the result) / ``system`` messages."""

from __future__ import annotations

from typing import Any

from trajectories.ingest.shared import (
    Builder,
    NormalizeError,
    builder_with,
    json_text,
    message_text,
    objects,
    optional_str,
    placeholder,
    text_parts,
    tool_name,
    type_name,
)

# LangChain message types, as ``message.type`` and as the class name ``dumpd`` records.
LANGCHAIN_TYPES = {"human", "ai", "tool", "system", "function", "chat", "remove"}
_CLASSES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "ToolMessage": "tool",
    "SystemMessage": "system",
    "FunctionMessage": "function",
    "ChatMessage": "chat",
    "RemoveMessage": "remove",
}
_CLASSES.update({f"{name}Chunk": kind for name, kind in list(_CLASSES.items())})


def langchain_kind(message: dict) -> str | None:
    """The LangChain message type of one serialized message, or None."""
    if message.get("lc") == 1 and message.get("type") == "constructor":
        ids = message.get("id")
        return _CLASSES.get(ids[-1]) if isinstance(ids, list) and ids else None
    kind = message.get("type")
    if not isinstance(kind, str):
        return None
    return kind if kind in LANGCHAIN_TYPES else _CLASSES.get(kind)


def _fields(message: dict) -> tuple[str | None, dict]:
    """(message type, its fields) of the three serialized forms."""
    kind = langchain_kind(message)
    if message.get("lc") == 1 and message.get("type") == "constructor":
        fields = message.get("kwargs")
    elif isinstance(message.get("data"), dict) and set(message) <= {"type", "data"}:
        fields = message["data"]
    else:
        fields = message
    return kind, fields if isinstance(fields, dict) else {}


def normalize_langchain(messages: list, *, system: Any = None) -> list[dict]:
    """Serialized LangChain messages (``messages_to_dict``, ``model_dump`` or ``dumpd``)."""
    builder = builder_with(system)
    for _, loc, message in objects(messages, "messages"):
        kind, fields = _fields(message)
        if kind is None:
            raise NormalizeError(
                f"{loc}.type", f"must be a LangChain message type {sorted(LANGCHAIN_TYPES)} like the other messages"
            )
        if kind == "chat":  # ChatMessage: an arbitrary role
            role = fields.get("role")
            kind = {"assistant": "ai", "ai": "ai", "system": "system", "tool": "tool"}.get(role, "human")
        content = fields.get("content")
        if kind == "ai":
            _ai(builder, fields, f"{loc}.content")
        elif kind == "remove":
            continue
        elif kind in ("tool", "function"):
            text = message_text(content, f"{loc}.content")
            call_id = optional_str(fields.get("tool_call_id"), f"{loc}.tool_call_id")
            name = tool_name(fields.get("name"), f"{loc}.name", required=False) or builder.tool_names.get(call_id or "")
            builder.add(
                "tool_result",
                text,
                name=name,
                call_id=call_id,
                is_error=True if fields.get("status") == "error" else None,
            )
        else:
            builder.add("system" if kind == "system" else "user", message_text(content, f"{loc}.content"))
    return builder.steps


def _reasoning(extra: Any) -> list[str]:
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


def _ai(builder: Builder, fields: dict, loc: str) -> None:
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
    for reasoning in _reasoning(extra):
        builder.add("thought", reasoning)

    content = fields.get("content")
    if isinstance(content, list):
        _content_blocks(builder, content, text_kind, loc, calls_given=bool(calls or invalid))
    else:
        text = message_text(content, loc)
        if text:
            builder.add(text_kind, text)

    cloc = loc.removesuffix(".content")
    for j, call in enumerate(calls):
        if not isinstance(call, dict):
            raise NormalizeError(f"{cloc}.tool_calls[{j}].name", "must be a non-empty string")
        name = tool_name(call.get("name"), f"{cloc}.tool_calls[{j}].name")
        args = call.get("args")
        builder.add(
            "tool_call",
            "",
            name=name,
            arguments="{}" if args is None else json_text(args, f"{cloc}.tool_calls[{j}].args"),
            call_id=optional_str(call.get("id"), f"{cloc}.tool_calls[{j}].id"),
        )
    for j, call in enumerate(invalid):
        if not isinstance(call, dict):
            raise NormalizeError(f"{cloc}.invalid_tool_calls[{j}]", f"must be an object, got {type_name(call)}")
        args = call.get("args")
        error = call.get("error")
        name = call.get("name") if isinstance(call.get("name"), str) and call.get("name") else "[invalid tool call]"
        builder.add(
            "tool_call",
            error if isinstance(error, str) else "",
            name=tool_name(name, f"{cloc}.invalid_tool_calls[{j}].name"),
            arguments="" if args is None else json_text(args, f"{cloc}.invalid_tool_calls[{j}].args"),
            call_id=optional_str(call.get("id"), f"{cloc}.invalid_tool_calls[{j}].id"),
            is_error=True,
        )


def _content_blocks(builder: Builder, content: list, text_kind: str, loc: str, *, calls_given: bool) -> None:
    """An AI message's content blocks; its tool-use blocks count only when the
    message has no ``tool_calls`` (those are authoritative)."""
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
            pending.append(text_parts([block], loc))
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
            if not calls_given:
                flush()
                name = tool_name(block.get("name"), f"{bloc}.name")
                arguments = block.get("input", block.get("args", block.get("arguments")))
                builder.add(
                    "tool_call",
                    "",
                    name=name,
                    arguments="{}" if arguments is None else json_text(arguments, bloc),
                    call_id=optional_str(block.get("id") or block.get("call_id"), f"{bloc}.id"),
                )
        elif isinstance(kind, str):
            pending.append(placeholder(kind, block))
        else:
            raise NormalizeError(f"{bloc}.type", "is missing")
    flush()
