"""OpenAI chat-completions ``messages``: system/developer/user/assistant/tool
roles, assistant ``tool_calls`` (function and custom tools), the legacy
``function_call``, content as a string, null or a list of parts."""

from __future__ import annotations

from typing import Any

from trajectories.ingest.shared import (
    SHAPES_HELP,
    Builder,
    NormalizeError,
    builder_with,
    json_text,
    message_text,
    objects,
    optional_str,
    tool_name,
    type_name,
)

OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
# Content parts only OpenAI sends (detection tells OpenAI from Anthropic by them).
OPENAI_ONLY_PARTS = {"image_url", "input_audio", "refusal", "file"}


def normalize_openai(messages: list, *, system: Any = None) -> list[dict]:
    """OpenAI chat-completions messages (and the legacy ``function_call``)."""
    builder = builder_with(system)
    for _, loc, message in objects(messages, "messages"):
        role = message.get("role")
        if role not in OPENAI_ROLES:
            raise NormalizeError(f"{loc}.role", f"must be one of {sorted(OPENAI_ROLES)}, got {role!r} ({SHAPES_HELP})")
        text = message_text(message.get("content"), f"{loc}.content")
        if role in ("system", "developer"):
            builder.add("system", text)
        elif role == "user":
            builder.add("user", text)
        elif role in ("tool", "function"):
            call_id = optional_str(message.get("tool_call_id"), f"{loc}.tool_call_id")
            name = tool_name(message.get("name"), f"{loc}.name", required=False) or builder.tool_names.get(
                call_id or ""
            )
            builder.add("tool_result", text, name=name, call_id=call_id)
        else:
            _assistant(builder, message, text, loc)
    return builder.steps


def _assistant(builder: Builder, message: dict, text: str, loc: str) -> None:
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
            raise NormalizeError(cloc, f"must be an object, got {type_name(call)}")
        call_id = optional_str(call.get("id"), f"{cloc}.id")
        function = call.get("function")
        if function is None and isinstance(call.get("custom"), dict):  # custom (free-form) tools
            function = {"name": call["custom"].get("name"), "arguments": call["custom"].get("input", "")}
        if not isinstance(function, dict):
            raise NormalizeError(f"{cloc}.function", "must be an object with 'name' and 'arguments'")
        name = tool_name(function.get("name"), f"{cloc}.function.name")
        arguments = function.get("arguments")
        arguments = "{}" if arguments is None else json_text(arguments, f"{cloc}.function.arguments")
        builder.add("tool_call", "", name=name, arguments=arguments, call_id=call_id)
    if legacy is not None:
        if not isinstance(legacy, dict) or not isinstance(legacy.get("name"), str):
            raise NormalizeError(f"{loc}.function_call", "must be an object with 'name' and 'arguments'")
        name = tool_name(legacy["name"], f"{loc}.function_call.name", required=False)
        arguments = legacy.get("arguments")
        arguments = "{}" if arguments is None else json_text(arguments, f"{loc}.function_call.arguments")
        builder.add("tool_call", "", name=name, arguments=arguments)
