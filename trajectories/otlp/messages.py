"""Reading a span's attributes: JSON-text values, GenAI semconv, OpenInference
and Pydantic AI message lists, all as semconv-shaped messages
(``[{role, parts: [{type, content | name, arguments, id | response}]}]``).

Every reader takes any JSON value where the conventions promise one type: a
value of another type is skipped (a message without a list of parts has no
parts), never raised on."""

from __future__ import annotations

import json
from typing import Any

from trajectories.ingest.shared import MAX_STEP_CONTENT_CHARS

# An OpenInference list index (``llm.input_messages.N.…``) has at most this many digits.
_MAX_INDEX_DIGITS = 6


def json_value(value: Any) -> Any:
    """Attributes that hold JSON text (message lists, arguments) parsed; other values as they are."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def text(value: Any) -> str:
    """Any attribute value as text: strings as they are, other values as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return "[a value too deeply nested to show]"


def clip(content: str) -> str:
    if len(content) <= MAX_STEP_CONTENT_CHARS:
        return content
    return content[: MAX_STEP_CONTENT_CHARS - 40] + f"\n[… cut: {len(content)} characters in all]"


def parts(message: dict) -> list[dict]:
    """The parts of a message that are objects (a ``parts`` that is not a list has none)."""
    found = message.get("parts")
    return [p for p in found if isinstance(p, dict)] if isinstance(found, list) else []


def semconv_messages(value: Any) -> list[dict]:
    """GenAI semconv messages (``[{role, parts: [{type, content | name, arguments, id | response}]}]``)."""
    value = json_value(value)
    if isinstance(value, dict):
        value = [value]
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _indexed(attrs: dict, prefix: str) -> dict[int, dict]:
    """``prefix.N.rest`` keys grouped by N (ASCII digits only): ``{N: {rest: value}}``."""
    found: dict[int, dict] = {}
    head = f"{prefix}."
    for key, value in attrs.items():
        if key.startswith(head):
            index, _, rest = key[len(head) :].partition(".")
            if index.isascii() and index.isdigit() and len(index) <= _MAX_INDEX_DIGITS:
                found.setdefault(int(index), {})[rest] = value
    return found


def _openinference_messages(attrs: dict, prefix: str) -> list[dict]:
    """``llm.input_messages.0.message.role`` … flattened attributes back into semconv-shaped messages."""
    messages = _indexed(attrs, prefix)
    result = []
    for _index, fields in sorted(messages.items()):
        # ``message.contents.N.message_content.{type,text}``: typed parts (the Agents SDK's reasoning
        # summaries come as ``reasoning`` parts, with no ``message.content``).
        found = []
        for _i, item in sorted(_indexed(fields, "message.contents").items()):
            kind = item.get("message_content.type") or "text"
            if kind in ("text", "reasoning") and item.get("message_content.text"):
                found.append({"type": kind, "content": text(item["message_content.text"])})
        raw = fields.get("message.content")
        content = "" if raw is None else text(raw)
        if content and not any(p["type"] == "text" for p in found):
            found.append({"type": "text", "content": content})
        content = content or "\n".join(p["content"] for p in found if p["type"] == "text")
        for _i, call in sorted(_indexed(fields, "message.tool_calls").items()):
            found.append(
                {
                    "type": "tool_call",
                    "id": call.get("tool_call.id"),
                    "name": call.get("tool_call.function.name", ""),
                    "arguments": call.get("tool_call.function.arguments"),
                }
            )
        role = fields.get("message.role", "")
        if role == "tool":
            found = [
                {
                    "type": "tool_call_response",
                    "id": fields.get("message.tool_call_id"),
                    "response": content,
                    "name": fields.get("message.name"),
                }
            ]
        result.append({"role": role, "parts": found})
    return result


def pydantic_ai_messages(value: Any) -> list[dict]:
    """Pydantic AI's ``pydantic_ai.all_messages`` is already semconv-shaped."""
    return semconv_messages(value)


def input_messages(attrs: dict) -> list[dict]:
    return (
        semconv_messages(attrs.get("gen_ai.input.messages"))
        or _openinference_messages(attrs, "llm.input_messages")
        or pydantic_ai_messages(attrs.get("pydantic_ai.all_messages"))
    )


def output_messages(attrs: dict) -> list[dict]:
    return semconv_messages(attrs.get("gen_ai.output.messages")) or _openinference_messages(
        attrs, "llm.output_messages"
    )


def parts_text(message: dict, kinds=("text",)) -> str:
    texts = []
    for part in parts(message):
        if part.get("type") in kinds:
            texts.append(text(part.get("content")))
    if not texts and isinstance(message.get("content"), str):  # older flat shape
        texts.append(message["content"])
    return "\n".join(t for t in texts if t)


def first_user_text(messages: list[dict]) -> str:
    for message in messages:
        if message.get("role") == "user":
            found = parts_text(message)
            if found:
                return found
    return ""


def last_assistant_text(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") in ("assistant", "model"):
            return parts_text(message)
    return ""


def system_text(attrs: dict, messages: list[dict]) -> str:
    instructions = json_value(attrs.get("gen_ai.system_instructions"))
    if isinstance(instructions, list):
        return "\n".join(text(p.get("content")) if isinstance(p, dict) else text(p) for p in instructions)
    if isinstance(instructions, str):
        return instructions
    return "\n".join(parts_text(m) for m in messages if m.get("role") in ("system", "developer"))
