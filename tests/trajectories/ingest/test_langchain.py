"""Serialized LangChain messages (trajectories.ingest.langchain)."""

import json

import pytest

from tests.trajectories.fixtures import make_fixtures
from tests.trajectories.ingest.shapes import (
    DATES_ANSWER,
    ESCAPING_NAME,
    LANGCHAIN_FIXTURES,
    UNPRINTABLE_NAMES,
    assert_name_refused,
    assert_step_shape,
    compact_steps,
)
from trajectories.ingest.normalize import inferred_final_answer, normalize_trajectory


@pytest.mark.parametrize("name", LANGCHAIN_FIXTURES)
def test_langchain_serialized_messages(name):
    steps, fmt = normalize_trajectory(messages=make_fixtures.load(name))
    assert fmt == "langchain"
    assert_step_shape(steps)
    assert compact_steps(steps) == [
        ("system", "You are a coding agent working in a git repository.", None, None, None, None),
        ("user", "Make the failing test in tests/test_dates.py pass.", None, None, None, None),
        ("thought", "First run the test to see the failure.", None, None, None, None),
        ("thought", "Running the test.", None, None, None, None),
        # the tool_use block of the content and tool_calls are one call: kept once
        ("tool_call", "", "bash", '{"command": "pytest -q"}', "toolu_01", None),
        ("tool_result", "FAILED test_parse_iso - ValueError", "bash", None, "toolu_01", True),
        ("thought", "The format string uses %d for the month.", None, None, None, None),
        ("tool_call", "", "str_replace", '{"path": "dates.py", "old": "%d", "new": "%m"}', "call_2", None),
        ("tool_call", "", "bash", '{"command": "pytest -q"}', "call_3", None),
        ("tool_result", "edited", "str_replace", None, "call_2", None),
        ("tool_result", "1 passed", "bash", None, "call_3", None),
        ("action", DATES_ANSWER, None, None, None, None),
    ]
    assert inferred_final_answer(steps, fmt) == DATES_ANSWER


def test_langchain_invalid_tool_call_chunk_types_and_openai_kwargs():
    steps, fmt = normalize_trajectory(
        messages=[
            {"type": "HumanMessageChunk", "content": "go"},
            {
                "type": "ai",
                "content": "",
                "additional_kwargs": {
                    "reasoning": {"summary": [{"type": "summary_text", "text": "plan"}]},
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                },
            },
            {
                "type": "ai",
                "content": "",
                "invalid_tool_calls": [{"name": "g", "args": "{bad", "id": "c2", "error": "bad JSON"}],
            },
        ]
    )
    assert fmt == "langchain"
    assert compact_steps(steps) == [
        ("user", "go", None, None, None, None),
        ("thought", "plan", None, None, None, None),
        ("tool_call", "", "f", "{}", "c1", None),
        ("tool_call", "bad JSON", "g", "{bad", "c2", True),
    ]
    assert inferred_final_answer(steps, fmt) == ""  # the agent's last act was a tool call


@pytest.mark.parametrize("name", [ESCAPING_NAME, *UNPRINTABLE_NAMES])
@pytest.mark.parametrize(
    "message, loc",
    [
        ({"type": "ai", "content": "", "tool_calls": [{"name": "NAME", "args": {}, "id": "c1"}]}, "tool_calls[0].name"),
        (
            {"type": "ai", "content": "", "invalid_tool_calls": [{"name": "NAME", "args": "{", "id": "c1"}]},
            "invalid_tool_calls[0].name",
        ),
        (
            {"type": "ai", "content": [{"type": "tool_use", "name": "NAME", "input": {}, "id": "c1"}]},
            "content[0].name",
        ),
        (
            {
                "type": "ai",
                "content": "",
                "additional_kwargs": {"tool_calls": [{"id": "c1", "function": {"name": "NAME", "arguments": "{}"}}]},
            },
            "tool_calls[0].name",
        ),
        ({"type": "tool", "content": "ok", "tool_call_id": "c1", "name": "NAME"}, "name"),
    ],
)
def test_tool_names_with_line_breaks_or_control_characters_are_refused(message, loc, name):
    message = json.loads(json.dumps(message).replace('"NAME"', json.dumps(name)))
    assert_name_refused(f"messages[1].{loc}", messages=[{"type": "human", "content": "q"}, message])
