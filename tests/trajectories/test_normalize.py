import json

import pytest

from tests.trajectories.payloads import ANTHROPIC_MESSAGES, ANTHROPIC_SYSTEM, NATIVE_STEPS, OPENAI_MESSAGES
from trajectories.normalize import (
    KINDS,
    MAX_STEP_CONTENT_CHARS,
    NormalizeError,
    detect_message_format,
    normalize_trajectory,
)


def _shape_ok(steps):
    assert [s["index"] for s in steps] == list(range(len(steps)))
    for s in steps:
        assert s["kind"] in KINDS
        assert isinstance(s["content"], str)
        assert set(s) <= {"index", "kind", "content", "name", "arguments", "call_id", "is_error"}


def _compact(steps):
    return [
        (s["kind"], s["content"], s.get("name"), s.get("arguments"), s.get("call_id"), s.get("is_error")) for s in steps
    ]


def test_openai_tool_calling_conversation():
    steps, fmt = normalize_trajectory(messages=OPENAI_MESSAGES)
    assert fmt == "openai"
    _shape_ok(steps)
    assert _compact(steps) == [
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
    assert _compact(steps)[1:] == [
        ("thought", "think first", None, None, None, None),
        ("tool_call", "", "f", '{"x": 1}', "c1", None),
        ("tool_call", "", "legacy", '{"y": 2}', None, None),
        ("tool_result", "ok", "legacy", None, None, None),
        ("user", "[image]", None, None, None, None),
    ]


def test_anthropic_tool_use_with_thinking():
    steps, fmt = normalize_trajectory(messages=ANTHROPIC_MESSAGES, system=ANTHROPIC_SYSTEM)
    assert fmt == "anthropic"
    _shape_ok(steps)
    assert _compact(steps) == [
        ("system", "You are a coding agent working in a git repository.", None, None, None, None),
        ("user", "Make the failing test in tests/test_dates.py pass.", None, None, None, None),
        ("thought", "First run the test to see the failure.", None, None, None, None),
        ("thought", "Running the test.", None, None, None, None),
        ("tool_call", "", "bash", '{"command": "pytest tests/test_dates.py -q"}', "toolu_01", None),
        ("tool_result", "FAILED test_parse_iso - ValueError", "bash", None, "toolu_01", True),
        ("tool_call", "", "str_replace", '{"path": "dates.py", "old": "%d", "new": "%m"}', "toolu_02", None),
        ("tool_result", "edited", "str_replace", None, "toolu_02", None),
        ("action", "Fixed the format string; the test passes now.", None, None, None, None),
    ]


def test_anthropic_detected_without_system_from_blocks():
    assert detect_message_format(ANTHROPIC_MESSAGES) == "anthropic"
    assert detect_message_format([{"role": "user", "content": "plain"}]) == "openai"
    assert detect_message_format([{"role": "user", "content": "plain"}], system="s") == "anthropic"


def test_native_steps_triples_and_normalized_mix():
    steps, fmt = normalize_trajectory(steps=NATIVE_STEPS)
    assert fmt == "steps"
    _shape_ok(steps)
    assert _compact(steps) == [
        ("thought", "The search box is at the top.", None, None, None, None),
        ("action", "click('#search')", None, None, None, None),
        ("observation", "search box focused", None, None, None, None),
        ("thought", "Type the query.", None, None, None, None),
        ("tool_call", "", "type_text", '{"text": "wireless mouse"}', None, None),
        ("observation", "typed", "type_text", None, None, None),
        ("action", "click('#go')", None, None, None, None),
        ("observation", "TimeoutError: #go not found", None, None, None, True),
        ("observation", "page reloaded", None, None, None, False),
        ("refinement", "Re-check: the button id is #submit, not #go.", None, None, None, None),
    ]


@pytest.mark.parametrize(
    "kwargs, loc",
    [
        ({}, ""),
        ({"steps": [], "messages": []}, ""),
        ({"steps": []}, "steps"),
        ({"steps": ["just text"]}, "steps[0]"),
        ({"steps": [{"thougth": "typo"}]}, "steps[0]"),
        ({"steps": [{"kind": "dream", "content": "x"}]}, "steps[0].kind"),
        ({"steps": [{"kind": "tool_call", "content": "", "is_error": "yes"}]}, "steps[0].is_error"),
        ({"steps": [{"action": "go", "arguments": {"a": 1}}]}, "steps[0].arguments"),
        ({"steps": [{"thought": 5}]}, "steps[0].thought"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 42}]}, "messages[0].content"),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}]},
            "messages[0].tool_calls[0].function.name",
        ),
        (
            {"messages": [{"role": "tool", "content": "x"}, {"role": "user", "content": [{"type": "tool_result"}]}]},
            "messages",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "tool_use", "name": ""}]}]},
            "messages[0].content[0].name",
        ),
        ({"steps": [{"thought": "x"}], "system": "s"}, "system"),
    ],
)
def test_bad_input_names_the_location(kwargs, loc):
    with pytest.raises(NormalizeError) as info:
        normalize_trajectory(**kwargs)
    assert info.value.loc == loc
    assert info.value.message


def test_step_content_limit_names_the_step():
    big = "x" * (MAX_STEP_CONTENT_CHARS + 1)
    with pytest.raises(NormalizeError) as info:
        normalize_trajectory(steps=[{"thought": "ok"}, {"observation": big}])
    assert "step 1 (observation).content" in str(info.value)
    assert str(MAX_STEP_CONTENT_CHARS) in str(info.value)
    # exactly at the limit is fine
    steps, _ = normalize_trajectory(steps=[{"observation": big[:-1]}])
    assert len(steps[0]["content"]) == MAX_STEP_CONTENT_CHARS


def test_unknown_anthropic_block_is_kept_not_dropped():
    steps, _ = normalize_trajectory(
        messages=[
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t", "name": "n", "input": {}},
                    {"type": "future_block", "data": 1},
                ],
            }
        ]
    )
    assert json.loads(steps[-1]["content"]) == {"type": "future_block", "data": 1}


def test_scrub_text_replaces_nul_and_surrogates_without_mutating_input():
    from trajectories.schemas import scrub_text

    data = {"task": "a\x00b", "steps": [{"observation": "x\ud800y", "k\x00": ["ok", "\x00"]}], "n": 1}
    clean = scrub_text(data)
    assert clean == {"task": "a\ufffdb", "steps": [{"observation": "x?y", "k\ufffd": ["ok", "\ufffd"]}], "n": 1}
    assert data["task"] == "a\x00b" and data["steps"][0]["observation"] == "x\ud800y"  # untouched
    untouched = {"task": "fine", "steps": [{"thought": "é"}]}
    assert scrub_text(untouched) is untouched
