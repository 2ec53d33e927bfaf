"""OpenAI Responses items, as the OpenAI Agents SDK's RunResult.to_input_list()
returns them (trajectories.ingest.responses)."""

import json

import pytest

from tests.trajectories.fixtures import make_fixtures
from tests.trajectories.ingest.shapes import (
    ESCAPING_NAME,
    KETTLE_ANSWER,
    UNPRINTABLE_NAMES,
    assert_name_refused,
    assert_step_shape,
    compact_steps,
)
from trajectories.ingest.normalize import inferred_final_answer, normalize_trajectory


def test_openai_agents_sdk_run_items():
    steps, fmt = normalize_trajectory(messages=make_fixtures.load("openai_agents_run.json"))
    assert fmt == "openai_responses"
    assert_step_shape(steps)
    assert compact_steps(steps) == [
        ("user", "Find the price of the blue kettle and add it to the cart.", None, None, None, None),
        ("thought", "The user wants the kettle price; search first.", None, None, None, None),
        ("thought", "I'll look the kettle up in the catalogue and check reviews.", None, None, None, None),
        ("tool_call", "", "search_catalogue", '{"query": "blue kettle"}', "call_a1", None),
        (
            "tool_call",
            "",
            "web_search",
            '{"action": {"type": "search", "query": "blue kettle K-22 reviews"}}',
            "ws_1",
            None,
        ),
        (
            "tool_result",
            '[{"sku": "K-22", "name": "Blue kettle", "price": 34.5}]',
            "search_catalogue",
            None,
            "call_a1",
            None,
        ),
        ("tool_call", "", "add_to_cart", '{"sku": "K-22"}', "call_a2", None),
        (
            "tool_result",
            "An error occurred while running the tool. Please try again.",
            "add_to_cart",
            None,
            "call_a2",
            None,
        ),
        ("action", KETTLE_ANSWER, None, None, None, None),
    ]
    assert inferred_final_answer(steps, fmt) == KETTLE_ANSWER


def test_openai_responses_builtin_tool_items():
    steps, fmt = normalize_trajectory(messages=make_fixtures.load("openai_responses_builtin.json"))
    assert fmt == "openai_responses"
    assert_step_shape(steps)
    compact = compact_steps(steps)
    assert compact[0] == ("user", "Audit the Q3 sales.", None, None, None, None)
    assert [(s["kind"], s.get("name")) for s in steps[1:-1]] == [
        ("tool_call", "file_search"),
        ("tool_result", "file_search"),
        ("tool_call", "code_interpreter"),
        ("tool_result", "code_interpreter"),
        ("tool_call", "computer"),
        ("tool_result", "computer"),
        ("tool_call", "lookup_account"),
        ("tool_result", "lookup_account"),
        ("tool_call", "image_generation"),
    ]
    by_call = {(s["kind"], s["call_id"]): s for s in steps if s.get("call_id")}
    assert json.loads(by_call["tool_call", "fs_1"]["arguments"]) == {"queries": ["Q3 sales"]}
    assert "north,120" in json.loads(by_call["tool_result", "fs_1"]["content"])[0]["text"]
    assert json.loads(by_call["tool_call", "ci_1"]["arguments"]) == {
        "code": "print(120 * 1.2)",
        "container_id": "cntr_1",
    }
    assert by_call["tool_result", "ci_1"]["content"] == "144.0"
    assert json.loads(by_call["tool_call", "call_cu1"]["arguments"])["action"]["type"] == "click"
    assert by_call["tool_result", "call_cu1"]["content"] == "[screenshot]"  # no base64 kept
    assert json.loads(by_call["tool_call", "mcp_1"]["arguments"]) == {"region": "north"}
    assert by_call["tool_result", "mcp_1"]["content"] == "account service unavailable"
    assert by_call["tool_result", "mcp_1"]["is_error"] is True
    assert by_call["tool_call", "ig_1"]["is_error"] is True  # status "failed"
    assert compact[-1] == ("action", "Q3 north total: 144 after the uplift.", None, None, None, None)
    assert inferred_final_answer(steps, fmt) == "Q3 north total: 144 after the uplift."


def test_unknown_responses_item_is_kept_not_dropped():
    steps, fmt = normalize_trajectory(
        messages=[
            {
                "role": "user",
                "content": [{"type": "input_text", "text": "q"}, {"type": "input_image", "image_url": "data:x"}],
            },
            {"type": "mcp_list_tools", "id": "l1", "server_label": "crm", "tools": [{"name": "lookup"}]},
        ]
    )
    assert fmt == "openai_responses"
    assert steps[0]["content"] == "q\n[image]"
    assert steps[1]["kind"] == "observation" and steps[1]["name"] == "mcp_list_tools"
    assert json.loads(steps[1]["content"])["tools"] == [{"name": "lookup"}]


def test_responses_message_items_without_tools():
    steps, fmt = normalize_trajectory(
        messages=[
            {"role": "user", "content": "q"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "a", "annotations": []}],
            },
        ]
    )
    assert fmt == "openai_responses"
    assert compact_steps(steps) == [("user", "q", None, None, None, None), ("action", "a", None, None, None, None)]
    assert inferred_final_answer(steps, fmt) == "a"


@pytest.mark.parametrize("name", [ESCAPING_NAME, *UNPRINTABLE_NAMES])
@pytest.mark.parametrize(
    "item, loc",
    [
        ({"type": "function_call", "name": "NAME", "call_id": "c1", "arguments": "{}"}, "messages[1].name"),
        ({"type": "custom_tool_call", "name": "NAME", "call_id": "c1", "input": "x"}, "messages[1].name"),
        ({"type": "mcp_call", "name": "NAME", "id": "m1", "arguments": "{}"}, "messages[1].name"),
        # a built-in call's type names its tool; an unknown item's type names its step
        ({"type": "NAME_call", "id": "b1"}, "messages[1].type"),
        ({"type": "mcp_NAME", "id": "u1"}, "messages[1].type"),
    ],
)
def test_tool_names_with_line_breaks_or_control_characters_are_refused(item, loc, name):
    item = {key: value.replace("NAME", name) if isinstance(value, str) else value for key, value in item.items()}
    assert_name_refused(loc, messages=[{"role": "user", "content": "q"}, item])
