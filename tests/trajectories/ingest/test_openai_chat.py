"""OpenAI chat-completions messages (trajectories.ingest.openai_chat)."""

import json

import pytest

from tests.trajectories.ingest.shapes import (
    ESCAPING_NAME,
    UNPRINTABLE_NAMES,
    assert_name_refused,
    assert_step_shape,
    compact_steps,
)
from tests.trajectories.payloads import OPENAI_MESSAGES
from trajectories.ingest.normalize import normalize_trajectory


def test_openai_tool_calling_conversation():
    steps, fmt = normalize_trajectory(messages=OPENAI_MESSAGES)
    assert fmt == "openai"
    assert_step_shape(steps)
    assert compact_steps(steps) == [
        ("system", "You are a shopping agent. Use the tools.", None, None, None, None),
        ("user", "Find the price of the blue kettle and add it to the cart.", None, None, None, None),
        ("thought", "I should search the catalogue first.", None, None, None, None),
        ("tool_call", "", "search_catalogue", '{"query": "blue kettle"}', "call_a1", None),
        ("tool_result", '[{"sku": "K-22", "price": 34.5}]', "search_catalogue", None, "call_a1", None),
        ("tool_call", "", "add_to_cart", '{"sku": "K-22"}', "call_a2", None),
        ("tool_call", "", "view_cart", "{}", "call_a3", None),
        ("tool_result", "error: out of stock", "add_to_cart", None, "call_a2", None),
        ("tool_result", "cart is empty", "view_cart", None, "call_a3", None),
        ("action", "The kettle costs 34.50 but is out of stock, so I could not add it.", None, None, None, None),
    ]


def test_openai_arguments_as_object_and_reasoning_and_legacy_function_call():
    steps, fmt = normalize_trajectory(
        messages=[
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "think first",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}],
            },
            {"role": "assistant", "content": None, "function_call": {"name": "legacy", "arguments": '{"y": 2}'}},
            {"role": "function", "name": "legacy", "content": "ok"},
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}}]},
        ]
    )
    assert fmt == "openai"
    assert compact_steps(steps)[1:] == [
        ("thought", "think first", None, None, None, None),
        ("tool_call", "", "f", '{"x": 1}', "c1", None),
        ("tool_call", "", "legacy", '{"y": 2}', None, None),
        ("tool_result", "ok", "legacy", None, None, None),
        ("user", "[image]", None, None, None, None),
    ]


@pytest.mark.parametrize("name", [ESCAPING_NAME, *UNPRINTABLE_NAMES])
@pytest.mark.parametrize(
    "message, loc",
    [
        (
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "NAME"}}]},
            "messages[1].tool_calls[0].function.name",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "NAME"}}]},
            "messages[1].tool_calls[0].function.name",
        ),
        ({"role": "assistant", "function_call": {"name": "NAME", "arguments": "{}"}}, "messages[1].function_call.name"),
        ({"role": "tool", "tool_call_id": "c1", "name": "NAME", "content": "ok"}, "messages[1].name"),
    ],
)
def test_tool_names_with_line_breaks_or_control_characters_are_refused(message, loc, name):
    message = json.loads(json.dumps(message).replace('"NAME"', json.dumps(name)))
    assert_name_refused(loc, messages=[{"role": "user", "content": "q"}, message])
