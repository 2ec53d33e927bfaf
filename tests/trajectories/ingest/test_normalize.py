"""The entry point (trajectories.ingest.normalize): detection, locations of
bad input, the limits every step keeps, the inferred final answer, and the
shapes through the real ingestion API."""

import json

import pytest

from reasoningbank_site.text import scrub_text
from tests.conftest import skip_unless
from tests.trajectories.fixtures import make_fixtures
from tests.trajectories.ingest.shapes import DATES_ANSWER, ESCAPING_NAME, KETTLE_ANSWER, LANGCHAIN_FIXTURES
from tests.trajectories.payloads import ANTHROPIC_MESSAGES, ANTHROPIC_SYSTEM, NATIVE_STEPS, OPENAI_MESSAGES
from trajectories.ingest.normalize import inferred_final_answer, normalize_trajectory
from trajectories.ingest.shared import MAX_STEP_CONTENT_CHARS, NormalizeError

API_URL = "/api/v1/trajectories"


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


def test_scrub_text_replaces_nul_and_surrogates_without_mutating_input():
    data = {"task": "a\x00b", "steps": [{"observation": "x\ud800y", "k\x00": ["ok", "\x00"]}], "n": 1}
    clean = scrub_text(data)
    assert clean == {"task": "a\ufffdb", "steps": [{"observation": "x?y", "k\ufffd": ["ok", "\ufffd"]}], "n": 1}
    assert data["task"] == "a\x00b" and data["steps"][0]["observation"] == "x\ud800y"  # untouched
    untouched = {"task": "fine", "steps": [{"thought": "é"}]}
    assert scrub_text(untouched) is untouched


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


@pytest.mark.parametrize(
    "body, field",
    [
        ({"steps": [{"kind": "tool_call", "name": ESCAPING_NAME}]}, "steps[0].name"),
        ({"steps": [{"tool": ESCAPING_NAME, "observation": "3 results"}]}, "steps[0].tool"),
        (
            {
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": ESCAPING_NAME}}]},
                ]
            },
            "messages[1].tool_calls[0].function.name",
        ),
    ],
)
def test_api_refuses_a_tool_name_that_is_not_one_line(client, auth, body, field):
    from trajectories.models import Trajectory

    response = _post(client, {"task": "t", **body}, auth)
    assert response.status_code == 422, response.content
    error = response.json()
    assert error["code"] == "validation_error"
    assert error["detail"].startswith(f"{field}: must not contain control characters or line breaks")
    assert Trajectory.objects.count() == 0


def test_a_step_name_is_checked_whatever_reader_made_it():
    from trajectories.ingest.shared import check_steps

    check_steps([{"index": 0, "kind": "tool_call", "content": "", "name": "search web"}])
    with pytest.raises(NormalizeError) as info:
        check_steps([{"index": 0, "kind": "tool_call", "content": "", "name": "search\nweb"}])
    assert info.value.loc == "step 0 (tool_call).name"
