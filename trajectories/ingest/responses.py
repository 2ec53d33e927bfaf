"""OpenAI Responses API items, as the OpenAI Agents SDK's
``RunResult.to_input_list()`` returns them: ``message``, ``reasoning``,
``function_call`` / ``function_call_output``, built-in tool calls such as
``web_search_call``, ``file_search_call``, ``computer_call``,
``code_interpreter_call``, ``mcp_call``… and their ``*_output`` items."""

from __future__ import annotations

from typing import Any

from trajectories.ingest.shared import (
    Builder,
    NormalizeError,
    builder_with,
    json_text,
    message_text,
    name_problem,
    objects,
    optional_str,
    placeholder,
    text_parts,
    tool_name,
    type_name,
)

# Item types that are neither tool calls (``*_call``) nor their outputs
# (``*_output``); those two families are recognised by their suffix.
RESPONSES_ITEM_TYPES = {"message", "reasoning", "item_reference", "compaction", "additional_tools"}
RESPONSES_PARTS = {"input_text", "output_text", "input_image", "input_file"}
_ROLES = {"user", "assistant", "system", "developer"}

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


def is_responses_item(message: dict) -> bool:
    """Whether ``message`` has the ``type`` of a Responses item."""
    kind = message.get("type")
    return isinstance(kind, str) and (
        kind in RESPONSES_ITEM_TYPES or kind.endswith(("_call", "_output")) or kind.startswith("mcp_")
    )


def responses_parts_in(message: dict) -> bool:
    """Whether ``message``'s content holds Responses parts (``output_text``…)."""
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") in RESPONSES_PARTS for part in content
    )


def _output(output: Any, loc: str) -> str:
    """A tool output as the Responses API carries it: text, a list of input
    parts, a screenshot, or any other JSON."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(part, (str, dict)) for part in output):
        return text_parts(output, loc)
    if isinstance(output, dict) and output.get("type") == "computer_screenshot":
        return "[screenshot]"
    return json_text(output, loc)


def _error(error: Any, loc: str) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return json_text(error, loc)


def _calls_follow(items: list, i: int) -> bool:
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
    builder = builder_with(system)
    for i, loc, item in objects(messages, "messages"):
        kind = item.get("type")
        if kind is None or kind == "message":
            _message(builder, messages, i, loc)
            continue
        if not isinstance(kind, str):
            raise NormalizeError(f"{loc}.type", f"must be a string, got {type_name(kind)}")
        if problem := name_problem(kind):  # a built-in or unknown item's type names its step
            raise NormalizeError(f"{loc}.type", problem)
        if kind == "reasoning":
            _reasoning(builder, item, loc)
        elif kind in ("function_call", "custom_tool_call", "mcp_call", "mcp_approval_request"):
            name = tool_name(item.get("name"), f"{loc}.name")
            key = "input" if kind == "custom_tool_call" else "arguments"
            arguments = "{}" if item.get(key) is None else json_text(item[key], f"{loc}.{key}")
            call_id = optional_str(item.get("call_id") or item.get("id"), f"{loc}.call_id")
            builder.add(
                "tool_call",
                "",
                name=name,
                arguments=arguments,
                call_id=call_id,
                is_error=True if item.get("status") == "failed" else None,
            )
            if kind == "mcp_call":
                _result(builder, item, name, call_id, loc)
        elif kind.endswith("_call"):
            name = kind.removesuffix("_call")
            arguments = {k: v for k, v in item.items() if k not in _BUILTIN_NOT_ARGUMENTS}
            call_id = optional_str(item.get("call_id") or item.get("id"), f"{loc}.call_id")
            builder.add(
                "tool_call",
                "",
                name=name,
                arguments=json_text(arguments, loc),
                call_id=call_id,
                is_error=True if item.get("status") == "failed" else None,
            )
            _result(builder, item, name, call_id, loc)
        elif kind.endswith("_output"):
            call_id = optional_str(item.get("call_id"), f"{loc}.call_id")
            builder.add(
                "tool_result",
                _output(item.get("output"), f"{loc}.output"),
                name=builder.tool_names.get(call_id or ""),
                call_id=call_id,
                is_error=True if item.get("status") == "failed" else None,
            )
        else:
            # An item type newer than this code (mcp_list_tools, item_reference…): keep it, as JSON.
            builder.add("observation", json_text(item, loc), name=kind)
    return builder.steps


def _reasoning(builder: Builder, item: dict, loc: str) -> None:
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


def _message(builder: Builder, items: list, i: int, loc: str) -> None:
    item = items[i]
    role = item.get("role")
    if role not in _ROLES:
        raise NormalizeError(f"{loc}.role", f"must be one of {sorted(_ROLES)}, got {role!r}")
    text = message_text(item.get("content"), f"{loc}.content")
    if role in ("system", "developer"):
        builder.add("system", text)
    elif role == "user":
        builder.add("user", text)
    elif text:
        builder.add("thought" if _calls_follow(items, i) else "action", text)


def _result(builder: Builder, item: dict, name: str, call_id: str | None, loc: str) -> None:
    """The result a built-in tool call item carries inside itself, if any."""
    parts = []
    if item.get("results") is not None:  # file_search_call
        parts.append(json_text(item["results"], f"{loc}.results"))
    outputs = item.get("outputs")
    if isinstance(outputs, list):  # code_interpreter_call
        for output in outputs:
            if isinstance(output, dict) and output.get("type") == "logs":
                parts.append(str(output.get("logs", "")))
            elif isinstance(output, dict) and output.get("type") == "image":
                parts.append(placeholder("input_image", {"image_url": output.get("url")}))
            else:
                parts.append(json_text(output, f"{loc}.outputs"))
    if isinstance(item.get("result"), str) and item["result"]:  # image_generation_call: base64 image
        parts.append("[image]")
    if item.get("output") is not None:  # mcp_call
        parts.append(_output(item["output"], f"{loc}.output"))
    if parts:
        builder.add("tool_result", "\n".join(parts), name=name, call_id=call_id)
    if item.get("error") is not None:
        builder.add("tool_result", _error(item["error"], f"{loc}.error"), name=name, call_id=call_id, is_error=True)
