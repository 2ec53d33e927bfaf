"""The entry point: detect which shape a trajectory was sent in, normalize it
with that shape's reader, and check the limits every step keeps."""

from __future__ import annotations

from typing import Any

from trajectories.ingest.anthropic_messages import ANTHROPIC_ONLY_BLOCKS, normalize_anthropic
from trajectories.ingest.langchain import langchain_kind, normalize_langchain
from trajectories.ingest.openai_chat import OPENAI_ONLY_PARTS, normalize_openai
from trajectories.ingest.responses import is_responses_item, normalize_responses, responses_parts_in
from trajectories.ingest.shared import (
    ANTHROPIC,
    LANGCHAIN,
    OPENAI,
    OPENAI_RESPONSES,
    SHAPES_HELP,
    STEPS,
    NormalizeError,
    check_steps,
)
from trajectories.ingest.steps import normalize_steps

_READERS = {
    OPENAI: normalize_openai,
    ANTHROPIC: normalize_anthropic,
    OPENAI_RESPONSES: normalize_responses,
    LANGCHAIN: normalize_langchain,
}


def normalize_trajectory(
    *, steps: list | None = None, messages: list | None = None, system: Any = None
) -> tuple[list[dict], str]:
    """Return ``(normalized steps, input_format)``. Exactly one of ``steps``
    and ``messages`` must be given; ``system`` goes with ``messages`` only.
    Raises NormalizeError naming the offending field."""
    if (steps is None) == (messages is None):
        raise NormalizeError("", "send exactly one of 'steps' or 'messages'")
    if steps is not None:
        if system is not None:
            raise NormalizeError("system", "'system' is only used together with 'messages'")
        result, input_format = normalize_steps(steps), STEPS
    else:
        input_format = detect_message_format(messages, system=system)
        result = _READERS[input_format](messages, system=system)
    if not result:
        raise NormalizeError("steps" if steps is not None else "messages", "contains no steps with content")
    check_steps(result)
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
            raise NormalizeError(f"messages[{i}]", f"must be an object; {SHAPES_HELP}")
        if langchain_kind(message):
            langchain_hint = langchain_hint or f"messages[{i}] (LangChain type '{langchain_kind(message)}')"
            continue
        if is_responses_item(message) and (message["type"] != "message" or responses_parts_in(message)):
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
                if kind in ANTHROPIC_ONLY_BLOCKS:
                    anthropic_hint = anthropic_hint or f"messages[{i}].content[{j}] (type '{kind}')"
                elif kind in OPENAI_ONLY_PARTS:
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
