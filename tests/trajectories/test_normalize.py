import json

import pytest

from reasoningbank_site.text import scrub_text
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
    data = {"task": "a\x00b", "steps": [{"observation": "x\ud800y", "k\x00": ["ok", "\x00"]}], "n": 1}
    clean = scrub_text(data)
    assert clean == {"task": "a\ufffdb", "steps": [{"observation": "x?y", "k\ufffd": ["ok", "\ufffd"]}], "n": 1}
    assert data["task"] == "a\x00b" and data["steps"][0]["observation"] == "x\ud800y"  # untouched
    untouched = {"task": "fine", "steps": [{"thought": "é"}]}
    assert scrub_text(untouched) is untouched


# --- the trace shapes agents really emit (fixtures made by the real libraries) -----------

from tests.conftest import skip_unless  # noqa: E402
from tests.trajectories.fixtures import make_fixtures  # noqa: E402
from trajectories.normalize import inferred_final_answer  # noqa: E402

KETTLE_ANSWER = "The kettle costs 34.50 but is out of stock, so I could not add it to the cart."
DATES_ANSWER = "Fixed the format string; the test passes now."
LANGCHAIN_FIXTURES = ["langchain_messages_to_dict.json", "langchain_model_dump.json", "langchain_dumpd.json"]


def test_openai_agents_sdk_run_items():
    steps, fmt = normalize_trajectory(messages=make_fixtures.load("openai_agents_run.json"))
    assert fmt == "openai_responses"
    _shape_ok(steps)
    assert _compact(steps) == [
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
    _shape_ok(steps)
    compact = _compact(steps)
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


@pytest.mark.parametrize("name", LANGCHAIN_FIXTURES)
def test_langchain_serialized_messages(name):
    steps, fmt = normalize_trajectory(messages=make_fixtures.load(name))
    assert fmt == "langchain"
    _shape_ok(steps)
    assert _compact(steps) == [
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
    assert _compact(steps) == [
        ("user", "go", None, None, None, None),
        ("thought", "plan", None, None, None, None),
        ("tool_call", "", "f", "{}", "c1", None),
        ("tool_call", "bad JSON", "g", "{bad", "c2", True),
    ]
    assert inferred_final_answer(steps, fmt) == ""  # the agent's last act was a tool call


@pytest.mark.parametrize(
    "messages, expected",
    [
        (OPENAI_MESSAGES, "The kettle costs 34.50 but is out of stock, so I could not add it."),
        (ANTHROPIC_MESSAGES, "Fixed the format string; the test passes now."),
        # ends on a tool result: no answer was given
        ([{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c", "content": "r"}], ""),
        # ends on a user turn the agent never answered
        ([{"role": "assistant", "content": "hello"}, {"role": "user", "content": "and?"}], ""),
        # the answer is stored trimmed
        ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "  42 \n"}], "42"),
    ],
)
def test_last_assistant_text_is_the_inferred_final_answer(messages, expected):
    system = ANTHROPIC_SYSTEM if messages is ANTHROPIC_MESSAGES else None
    steps, fmt = normalize_trajectory(messages=messages, system=system)
    assert inferred_final_answer(steps, fmt) == expected


def test_native_steps_never_infer_a_final_answer():
    steps, fmt = normalize_trajectory(steps=[{"action": "say('done')"}])
    assert inferred_final_answer(steps, fmt) == ""


@pytest.mark.parametrize(
    "messages, loc, words",
    [
        ([{"foo": 1}], "messages[0].role", "LangChain"),
        (["text"], "messages[0]", "Responses"),
        (
            [{"type": "human", "data": {"content": "q"}}, {"type": "function_call", "name": "f", "call_id": "c"}],
            "messages",
            "mixes LangChain",
        ),
        (
            [
                {"type": "function_call", "name": "f", "call_id": "c"},
                {"role": "tool", "tool_call_id": "c", "content": "x"},
            ],
            "messages",
            "mixes OpenAI Responses",
        ),
        ([{"type": "human", "content": "q"}, {"role": "user", "content": "x"}], "messages[1].type", "LangChain"),
        ([{"type": "function_call", "arguments": "{}"}], "messages[0].name", "non-empty"),
        ([{"type": "message", "role": "robot", "content": "x"}], "messages[0].role", "robot"),
        ([{"type": "ai", "content": "", "tool_calls": [{"args": {}}]}], "messages[0].tool_calls[0].name", "non-empty"),
    ],
)
def test_unknown_or_broken_new_shapes_name_the_location(messages, loc, words):
    with pytest.raises(NormalizeError) as info:
        normalize_trajectory(messages=messages)
    assert info.value.loc == loc
    assert words in info.value.message


def test_anthropic_message_objects_with_type_message_stay_anthropic():
    messages = [
        {"type": "message", "id": "msg_1", "stop_reason": "end_turn", **m} if m["role"] == "assistant" else m
        for m in ANTHROPIC_MESSAGES
    ]
    steps, fmt = normalize_trajectory(messages=messages, system=ANTHROPIC_SYSTEM)
    assert fmt == "anthropic"
    assert steps == normalize_trajectory(messages=ANTHROPIC_MESSAGES, system=ANTHROPIC_SYSTEM)[0]


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


def test_fixtures_match_what_the_libraries_produce():
    """Regenerate every fixture with the installed libraries and compare, so a
    fixture is never a hand-typed guess of what the SDKs emit."""
    try:
        import agents  # noqa: F401
        import langchain_core  # noqa: F401
    except ImportError:
        available = False
    else:
        available = True
    skip_unless(available, "openai-agents and langchain-core are not installed (pip install -e '.[dev]')")
    fresh = make_fixtures.build_all()
    assert sorted(fresh) == sorted(make_fixtures.FILES)
    for name, data in fresh.items():
        assert data == make_fixtures.load(name), f"{name} differs from what the libraries produce now; regenerate it"


# --- through the real ingestion API -----------------------------------------------------------

API_URL = "/api/v1/trajectories"


def _post(client, body, auth):
    return client.post(API_URL, data=json.dumps(body), content_type="application/json", **auth)


@pytest.mark.parametrize(
    "fixture, input_format, final_answer",
    [
        ("openai_agents_run.json", "openai_responses", KETTLE_ANSWER),
        ("openai_responses_builtin.json", "openai_responses", "Q3 north total: 144 after the uplift."),
        *[(name, "langchain", DATES_ANSWER) for name in LANGCHAIN_FIXTURES],
    ],
)
def test_api_ingests_library_fixtures(client, auth, bank, fixture, input_format, final_answer):
    from trajectories.models import Trajectory

    messages = make_fixtures.load(fixture)
    response = _post(client, {"task": "t", "messages": messages}, auth)
    assert response.status_code == 202, response.content
    trajectory = Trajectory.objects.get(public_id=response.json()["id"])
    assert trajectory.bank == bank
    assert trajectory.input_format == input_format
    assert trajectory.steps == normalize_trajectory(messages=messages)[0]
    assert trajectory.step_count == len(trajectory.steps)
    assert trajectory.final_answer == final_answer
    assert any(s["kind"] == "tool_call" and s.get("arguments") for s in trajectory.steps)
    assert any(s["kind"] == "tool_result" for s in trajectory.steps)


@pytest.mark.parametrize(
    "extra, final_answer",
    [
        ({"messages": OPENAI_MESSAGES}, "The kettle costs 34.50 but is out of stock, so I could not add it."),
        ({"messages": ANTHROPIC_MESSAGES, "system": ANTHROPIC_SYSTEM}, "Fixed the format string; the test passes now."),
        ({"messages": OPENAI_MESSAGES, "final_answer": "sent by the agent"}, "sent by the agent"),
        ({"steps": NATIVE_STEPS}, ""),  # native steps: never guessed
    ],
)
def test_api_final_answer_is_inferred_only_when_missing(client, auth, extra, final_answer):
    from trajectories.models import Trajectory

    response = _post(client, {"task": "t", **extra}, auth)
    assert response.status_code == 202, response.content
    assert Trajectory.objects.get(public_id=response.json()["id"]).final_answer == final_answer


@pytest.mark.parametrize(
    "messages, needle",
    [
        ([{"kind": "mystery", "payload": 1}], "messages[0].role"),
        ([{"type": "ai", "content": "x"}, {"type": "function_call", "name": "f", "call_id": "c"}], "mixes LangChain"),
        ([{"type": "function_call", "call_id": "c"}], "messages[0].name"),
    ],
)
def test_api_unknown_or_broken_shapes_are_a_clear_422(client, auth, messages, needle):
    from trajectories.models import Trajectory

    response = _post(client, {"task": "t", "messages": messages}, auth)
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert needle in detail
    assert Trajectory.objects.count() == 0


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
    assert _compact(steps) == [("user", "q", None, None, None, None), ("action", "a", None, None, None, None)]
    assert inferred_final_answer(steps, fmt) == "a"
