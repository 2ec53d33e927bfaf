"""Native steps (trajectories.ingest.steps)."""

import pytest

from tests.trajectories.ingest.shapes import (
    ESCAPING_NAME,
    UNPRINTABLE_NAMES,
    assert_name_refused,
    assert_step_shape,
    compact_steps,
)
from tests.trajectories.payloads import NATIVE_STEPS
from trajectories.ingest.normalize import inferred_final_answer, normalize_trajectory


def test_native_steps_triples_and_normalized_mix():
    steps, fmt = normalize_trajectory(steps=NATIVE_STEPS)
    assert fmt == "steps"
    assert_step_shape(steps)
    assert compact_steps(steps) == [
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


def test_native_steps_never_infer_a_final_answer():
    steps, fmt = normalize_trajectory(steps=[{"action": "say('done')"}])
    assert inferred_final_answer(steps, fmt) == ""


@pytest.mark.parametrize("name", [ESCAPING_NAME, *UNPRINTABLE_NAMES])
@pytest.mark.parametrize(
    "step, loc",
    [
        ({"tool": "NAME", "arguments": {"q": "x"}}, "steps[1].tool"),
        ({"kind": "tool_call", "name": "NAME", "content": ""}, "steps[1].name"),
        ({"kind": "tool_result", "name": "NAME", "content": "ok"}, "steps[1].name"),
    ],
)
def test_tool_names_with_line_breaks_or_control_characters_are_refused(step, loc, name):
    step = {key: name if value == "NAME" else value for key, value in step.items()}
    assert_name_refused(loc, steps=[{"thought": "look it up"}, step])


def test_tool_names_keep_spaces_punctuation_and_any_script():
    steps, _ = normalize_trajectory(
        steps=[{"tool": "mcp.crm/lookup account (v2)", "observation": "ok"}, {"kind": "tool_call", "name": "検索"}]
    )
    assert [s.get("name") for s in steps] == ["mcp.crm/lookup account (v2)", "mcp.crm/lookup account (v2)", "検索"]
