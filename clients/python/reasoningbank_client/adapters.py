"""Turn what agent frameworks emit into OpenAI chat-completions messages, the
shape the service reads today (assistant ``tool_calls``, ``tool`` results,
``reasoning_content`` for thinking). Duck-typed: no framework is imported.

Accepted by ``to_messages``:
- an OpenAI Agents SDK run result (anything with ``to_input_list()``), or a
  list of OpenAI Responses-API items (``message``, ``function_call``,
  ``function_call_output``, ``reasoning``, built-in ``*_call`` items);
- LangChain messages (``BaseMessage`` objects, or their serialized dicts:
  ``{"type": "human"|"ai"|"tool"|..., ...}`` or ``{"type": ..., "data": {...}}``);
- chat-completions or Anthropic messages, passed through unchanged.

The service reads the Responses and LangChain shapes itself too
(trajectories/ingest/), so a raw list would be accepted; the client
still converts because ``to_messages`` and ``trajectory_body`` are public and
promise chat-completions messages, with the final answer guessed on this
side (an Agents SDK run result's ``final_output`` is only here). Objects
(run results, pydantic or LangChain messages) must become JSON here in any
case."""

from __future__ import annotations

import json
from typing import Any

_LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}
_RESPONSES_TYPES = {"message", "function_call", "function_call_output", "reasoning", "item_reference"}


def to_messages(value: Any) -> tuple[list[dict[str, Any]], str | None]:
    """``(chat-completions messages, final answer guess or None)`` for any shape above."""
    final_output = None
    if hasattr(value, "to_input_list") and callable(value.to_input_list):
        output = getattr(value, "final_output", None)
        final_output = output if isinstance(output, str) and output else None
        value = value.to_input_list()
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"messages must be a list of messages or an agent run result, got {type(value).__name__}")
    items = [_plain(m) for m in value]
    if any(_is_langchain(m) for m in items):
        messages = [_from_langchain(m) for m in items]
    elif any(_is_responses_item(m) for m in items):
        messages = _from_responses(items)
    else:
        return items, None  # already chat-completions (or Anthropic): the service reads it
    return messages, final_output or last_assistant_text(messages)


def last_assistant_text(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str) and message["content"]:
            return message["content"]
    return None


# --- helpers ---------------------------------------------------------------------------


def _plain(message: Any) -> Any:
    """A dict for a dict, a pydantic model (``model_dump``) or a LangChain message."""
    if isinstance(message, dict):
        return message
    if hasattr(message, "model_dump"):
        try:
            return message.model_dump(exclude_none=True, mode="json")
        except TypeError:
            return message.model_dump()
    if hasattr(message, "dict"):
        return message.dict()
    raise TypeError(f"cannot read a message of type {type(message).__name__}")


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _text(content: Any) -> str:
    """Text of a content string or list of parts/blocks; other parts become a ``[type]`` marker."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return _json(content)
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict):
            kind = part.get("type")
            if isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif kind == "refusal" and isinstance(part.get("refusal"), str):
                parts.append(part["refusal"])
            elif kind in ("reasoning", "thinking", "tool_use", "tool_call", "function_call"):
                continue  # carried elsewhere (reasoning_content, tool_calls)
            else:
                parts.append(f"[{kind or 'part'}]")
    return "\n".join(p for p in parts if p)


def _reasoning(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("reasoning", "thinking"):
            text = part.get("reasoning") or part.get("thinking") or part.get("text")
            if isinstance(text, str) and text:
                texts.append(text)
            for summary in part.get("summary") or []:
                if isinstance(summary, dict) and isinstance(summary.get("text"), str):
                    texts.append(summary["text"])
    return "\n".join(texts)


# --- LangChain -------------------------------------------------------------------------


def _is_langchain(message: Any) -> bool:
    if not isinstance(message, dict) or "role" in message:
        return False
    kind = message.get("type")
    return isinstance(kind, str) and (kind in _LANGCHAIN_ROLES or kind == "chat" or kind.endswith("MessageChunk"))


def _from_langchain(message: dict[str, Any]) -> dict[str, Any]:
    if "data" in message and isinstance(message["data"], dict):  # messages_to_dict() shape
        message = {**message["data"], "type": message["type"]}
    kind = message.get("type", "")
    if kind.endswith("MessageChunk"):
        kind = {"AIMessageChunk": "ai", "HumanMessageChunk": "human", "ToolMessageChunk": "tool"}.get(kind, "chat")
    if kind == "chat":
        role = message.get("role", "user")
        role = {"human": "user", "ai": "assistant"}.get(role, role)
    else:
        role = _LANGCHAIN_ROLES.get(kind, "user")
    content = message.get("content")
    if role == "tool":
        text = _text(content)
        if message.get("status") == "error":
            text = f"Error: {text}"
        out = {"role": "tool", "tool_call_id": message.get("tool_call_id") or "", "content": text}
        if message.get("name"):
            out["name"] = message["name"]
        return out
    if role != "assistant":
        return {"role": role, "content": _text(content)}
    out: dict[str, Any] = {"role": "assistant", "content": _text(content) or None}
    extra = message.get("additional_kwargs") or {}
    reasoning = extra.get("reasoning_content") or _reasoning(content)
    if isinstance(reasoning, str) and reasoning:
        out["reasoning_content"] = reasoning
    calls = []
    for call in message.get("tool_calls") or []:
        calls.append(_chat_call(call.get("id"), call.get("name"), call.get("args") or {}))
    for call in message.get("invalid_tool_calls") or []:
        calls.append(_chat_call(call.get("id"), call.get("name") or "invalid_tool_call", call.get("args") or ""))
    if calls:
        out["tool_calls"] = calls
    return out


def _chat_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    call: dict[str, Any] = {
        "type": "function",
        "function": {"name": str(name or "tool"), "arguments": _json(arguments)},
    }
    if call_id:
        call["id"] = str(call_id)
    return call


# --- OpenAI Responses API items (Agents SDK to_input_list()) --------------------------------


def _is_responses_item(message: Any) -> bool:
    if not isinstance(message, dict):
        return False
    kind = message.get("type")
    return isinstance(kind, str) and (kind in _RESPONSES_TYPES or kind.endswith(("_call", "_call_output")))


_NOT_ARGUMENTS = {"type", "id", "status", "call_id", "output", "outputs", "result", "results", "provider_data"}


def _from_responses(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None  # the assistant turn being assembled

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            messages.append(pending)
            pending = None

    def assistant(kind: str) -> dict[str, Any]:
        # A new assistant message starts when the current one already has what comes later in order:
        # reasoning → text → tool calls.
        nonlocal pending
        if pending is not None and (
            (kind == "reasoning" and ("content" in pending or "tool_calls" in pending))
            or (kind == "text" and ("tool_calls" in pending or "content" in pending))
        ):
            flush()
        if pending is None:
            pending = {"role": "assistant"}
        return pending

    for item in items:
        kind = item.get("type")
        role = item.get("role")
        if kind in (None, "message") and role in ("user", "system", "developer"):
            flush()
            messages.append({"role": role, "content": _text(item.get("content"))})
        elif kind in (None, "message") and role == "assistant":
            text = _text(item.get("content"))
            if text:
                assistant("text")["content"] = text
        elif kind == "reasoning":
            text = "\n".join(
                p["text"] for p in (item.get("summary") or []) + (item.get("content") or []) if p.get("text")
            )
            if text:
                turn = assistant("reasoning")
                turn["reasoning_content"] = "\n".join(filter(None, [turn.get("reasoning_content"), text]))
        elif kind in ("function_call", "custom_tool_call"):
            arguments = item.get("arguments") if kind == "function_call" else item.get("input", "")
            call = _chat_call(item.get("call_id") or item.get("id"), item.get("name"), arguments or "{}")
            assistant("tool").setdefault("tool_calls", []).append(call)
        elif kind.endswith("_call_output"):
            flush()
            messages.append(
                {"role": "tool", "tool_call_id": str(item.get("call_id") or ""), "content": _text(item.get("output"))}
            )
        elif kind.endswith("_call"):  # built-in tools: web_search, file_search, computer, code_interpreter, mcp, …
            name = item.get("name") if kind == "mcp_call" and item.get("name") else kind.removesuffix("_call")
            arguments = {k: v for k, v in item.items() if k not in _NOT_ARGUMENTS}
            call_id = item.get("call_id") or item.get("id")
            assistant("tool").setdefault("tool_calls", []).append(_chat_call(call_id, name, arguments))
            result = next((item[k] for k in ("output", "outputs", "result", "results") if item.get(k)), None)
            if result is not None:
                flush()
                messages.append({"role": "tool", "tool_call_id": str(call_id or ""), "content": _text(result)})
        elif kind == "item_reference":
            continue
        else:  # an item type this client does not know yet: keep it whole, as a tool call named by its type
            assistant("tool").setdefault("tool_calls", []).append(
                _chat_call(item.get("id"), kind, {k: v for k, v in item.items() if k != "type"})
            )
    flush()
    return messages
