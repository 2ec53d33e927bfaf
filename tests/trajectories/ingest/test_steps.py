"""Native steps (trajectories.ingest.steps)."""

from tests.trajectories.ingest.shapes import assert_step_shape, compact_steps
from tests.trajectories.payloads import NATIVE_STEPS
from trajectories.ingest import inferred_final_answer, normalize_trajectory


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
