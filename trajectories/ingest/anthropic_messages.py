"""Anthropic Messages API ``messages``: content as a string or blocks
(``text``, ``thinking``, ``tool_use``, ``tool_result``…), with the top-level
``system`` sent apart."""

from __future__ import annotations

from typing import Any

from trajectories.ingest.shared import (
    Builder,
    NormalizeError,
    builder_with,
    json_text,
    objects,
    optional_str,
    placeholder,
    text_parts,
    tool_name,
    type_name,
)

# Content blocks only Anthropic sends (detection tells Anthropic from OpenAI by them).
ANTHROPIC_ONLY_BLOCKS = {
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "document",
}


def normalize_anthropic(messages: list, *, system: Any = None) -> list[dict]:
    """Anthropic Messages API conversations (``system`` sent apart)."""
    builder = builder_with(system)
    for _, loc, message in objects(messages, "messages"):
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
            raise NormalizeError(f"{loc}.content", f"must be a string or a list of blocks, got {type_name(content)}")
        _blocks(builder, content, text_kind, f"{loc}.content")
    return builder.steps


def _blocks(builder: Builder, blocks: list, text_kind: str, loc: str) -> None:
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
            pending.append(placeholder(kind, block))
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
            name = tool_name(block.get("name"), f"{bloc}.name")
            arguments = json_text(block.get("input", {}), f"{bloc}.input")
            builder.add(
                "tool_call", "", name=name, arguments=arguments, call_id=optional_str(block.get("id"), f"{bloc}.id")
            )
        elif kind == "tool_result" or kind.endswith("_tool_result"):
            call_id = optional_str(block.get("tool_use_id"), f"{bloc}.tool_use_id")
            result = block.get("content")
            if result is None:
                text = ""
            elif isinstance(result, str):
                text = result
            elif isinstance(result, list) and kind == "tool_result":
                text = text_parts(result, f"{bloc}.content")
            else:
                text = json_text(result, f"{bloc}.content")
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
            builder.add(text_kind, json_text(block, bloc))
    flush()
