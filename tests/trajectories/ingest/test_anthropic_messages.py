"""Anthropic messages (trajectories.ingest.anthropic_messages)."""

import json

import pytest

from tests.trajectories.ingest.shapes import (
    ESCAPING_NAME,
    UNPRINTABLE_NAMES,
    assert_name_refused,
    assert_step_shape,
    compact_steps,
)
from tests.trajectories.payloads import ANTHROPIC_MESSAGES, ANTHROPIC_SYSTEM
from trajectories.ingest.normalize import detect_message_format, normalize_trajectory


def test_anthropic_tool_use_with_thinking():
    steps, fmt = normalize_trajectory(messages=ANTHROPIC_MESSAGES, system=ANTHROPIC_SYSTEM)
    assert fmt == "anthropic"
    assert_step_shape(steps)
    assert compact_steps(steps) == [
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


def test_anthropic_message_objects_with_type_message_stay_anthropic():
    messages = [
        {"type": "message", "id": "msg_1", "stop_reason": "end_turn", **m} if m["role"] == "assistant" else m
        for m in ANTHROPIC_MESSAGES
    ]
    steps, fmt = normalize_trajectory(messages=messages, system=ANTHROPIC_SYSTEM)
    assert fmt == "anthropic"
    assert steps == normalize_trajectory(messages=ANTHROPIC_MESSAGES, system=ANTHROPIC_SYSTEM)[0]


@pytest.mark.parametrize("name", [ESCAPING_NAME, *UNPRINTABLE_NAMES])
@pytest.mark.parametrize("block_type", ["tool_use", "server_tool_use"])
def test_tool_names_with_line_breaks_or_control_characters_are_refused(block_type, name):
    block = {"type": block_type, "id": "toolu_1", "name": name, "input": {}}
    assert_name_refused(
        "messages[1].content[0].name",
        messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": [block]}],
    )
