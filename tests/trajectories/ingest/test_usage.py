"""Token usage sent with a trajectory: the native ``usage`` field (both
namings), the usage objects of Anthropic Messages, OpenAI responses and
LangChain AI messages carried in ``messages``, OpenTelemetry's
``gen_ai.usage.*`` and the batch endpoint all fill the trajectory's prompt and
completion tokens; bad usage is a 422 that stores nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.trajectories.otlp.test_mapping import span
from trajectories.ingest.record import trajectory_ingest
from trajectories.models import Trajectory
from trajectories.otlp.decode import decode_export, is_agent_span
from trajectories.otlp.mapping import trace_to_trajectory

FIXTURES = Path(__file__).parent.parent / "fixtures"
URL = "/api/v1/trajectories"
STEPS = [{"thought": "Look it up", "action": "search('hours')", "observation": "9-5"}]


def post(client, auth, body, url=URL):
    return client.post(url, data=json.dumps(body), content_type="application/json", **auth)


def stored(response) -> Trajectory:
    assert response.status_code == 202, response.content
    return Trajectory.objects.get(public_id=response.json()["id"])


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 1200, "completion_tokens": 300}, (1200, 300)),
        ({"input_tokens": 1200, "output_tokens": 300, "total_tokens": 1500}, (1200, 300)),
        # Anthropic counts the prompt's cached part apart: it is still prompt the run sent.
        (
            {
                "input_tokens": 20,
                "output_tokens": 300,
                "cache_creation_input_tokens": 1000,
                "cache_read_input_tokens": 180,
            },
            (1200, 300),
        ),
        ({"completion_tokens": 40}, (None, 40)),
        ({"prompt_tokens": 0, "completion_tokens": 0}, (0, 0)),
    ],
)
def test_native_usage_in_either_naming_fills_the_trajectory(client, auth, usage, expected):
    trajectory = stored(post(client, auth, {"task": "Opening hours?", "steps": STEPS, "usage": usage}))
    assert (trajectory.prompt_tokens, trajectory.completion_tokens) == expected


def test_without_usage_the_counts_stay_unknown(client, auth):
    trajectory = stored(post(client, auth, {"task": "Opening hours?", "steps": STEPS}))
    assert (trajectory.prompt_tokens, trajectory.completion_tokens) == (None, None)


@pytest.mark.parametrize(
    ("usage", "words"),
    [
        ({"prompt_tokens": -5, "completion_tokens": 3}, "must not be negative"),
        ({"prompt_tokens": 12.5, "completion_tokens": 3}, "whole number"),
        ({"prompt_tokens": "12", "completion_tokens": 3}, "whole number"),
        ({"prompt_tokens": True, "completion_tokens": 3}, "whole number"),
        ({"prompt_tokens": 10**12, "completion_tokens": 3}, "the limit for one run is 1,000,000,000"),
        ({"prompt_tokens": 5, "input_tokens": 5}, "not both"),
        ({"total_tokens": 50}, "carries no token count"),
        ([100, 20], "must be an object"),
        ({"input_tokens": 999_999_999, "cache_read_input_tokens": 999_999_999}, "adds up to"),
    ],
)
def test_bad_usage_is_a_clear_422_and_stores_nothing(client, auth, usage, words):
    response = post(client, auth, {"task": "Opening hours?", "steps": STEPS, "usage": usage})
    assert response.status_code == 422, response.content
    assert words in response.json()["detail"] and "usage" in response.json()["detail"]
    assert not Trajectory.objects.exists()


def anthropic_message(text: str, usage: dict) -> dict:
    """An Anthropic Message object as the SDK's model_dump() returns it."""
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": usage,
    }


def test_anthropic_message_objects_usage_is_summed(client, auth):
    messages = [
        {"role": "user", "content": "Opening hours of the library?"},
        anthropic_message("Let me check.", {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 50}),
        {"role": "user", "content": "And on Sunday?"},
        anthropic_message("Closed on Sundays.", {"input_tokens": 170, "output_tokens": 12}),
    ]
    trajectory = stored(post(client, auth, {"task": "Opening hours?", "messages": messages, "system": "Be brief."}))
    assert trajectory.input_format == "anthropic"
    assert (trajectory.prompt_tokens, trajectory.completion_tokens) == (320, 22)


def test_a_top_level_usage_wins_over_the_messages(client, auth):
    messages = [
        {"role": "user", "content": "Hours?"},
        anthropic_message("9-5.", {"input_tokens": 100, "output_tokens": 10}),
    ]
    body = {"task": "Hours?", "messages": messages, "system": "x", "usage": {"input_tokens": 7, "output_tokens": 3}}
    trajectory = stored(post(client, auth, body))
    assert (trajectory.prompt_tokens, trajectory.completion_tokens) == (7, 3)


def test_openai_chat_messages_with_a_top_level_usage(client, auth):
    messages = [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "18°C and cloudy."},
    ]
    usage = {  # a ChatCompletion's usage, as the SDK returns it
        "prompt_tokens": 54,
        "completion_tokens": 9,
        "total_tokens": 63,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    trajectory = stored(post(client, auth, {"task": "Weather?", "messages": messages, "usage": usage}))
    assert trajectory.input_format == "openai"
    assert (trajectory.prompt_tokens, trajectory.completion_tokens) == (54, 9)


@pytest.mark.parametrize("dump", ["messages_to_dict", "model_dump", "dumpd"])
def test_langchain_ai_messages_usage_metadata_is_summed(client, auth, dump):
    from langchain_core.load import dumpd
    from langchain_core.messages import AIMessage, HumanMessage, messages_to_dict

    messages = [
        HumanMessage("Opening hours?"),
        AIMessage("Checking.", usage_metadata={"input_tokens": 40, "output_tokens": 5, "total_tokens": 45}),
        AIMessage("9 to 5.", usage_metadata={"input_tokens": 60, "output_tokens": 6, "total_tokens": 66}),
    ]
    dumped = {
        "messages_to_dict": lambda: messages_to_dict(messages),
        "model_dump": lambda: [m.model_dump() for m in messages],
        "dumpd": lambda: [dumpd(m) for m in messages],
    }[dump]()
    trajectory = stored(post(client, auth, {"task": "Opening hours?", "messages": dumped}))
    assert trajectory.input_format == "langchain"
    assert (trajectory.prompt_tokens, trajectory.completion_tokens) == (100, 11)


def test_bad_usage_inside_a_message_names_the_message(client, auth):
    messages = [
        {"role": "user", "content": "Hours?"},
        anthropic_message("9-5.", {"input_tokens": -1, "output_tokens": 10}),
    ]
    response = post(client, auth, {"task": "Hours?", "messages": messages, "system": "x"})
    assert response.status_code == 422, response.content
    assert "messages[1].usage" in response.json()["detail"] and "negative" in response.json()["detail"]
    assert not Trajectory.objects.exists()


def test_the_batch_endpoint_reads_usage_and_fails_a_bad_item_alone(client, auth):
    good = {"task": "Hours?", "steps": STEPS, "usage": {"input_tokens": 30, "output_tokens": 4}}
    bad = {"task": "Hours?", "steps": STEPS, "usage": {"input_tokens": -30}}
    response = post(client, auth, {"trajectories": [good, bad]}, url=f"{URL}/batch")
    assert response.status_code in (200, 207), response.content
    results = response.json()["results"]
    assert results[0]["ok"] and not results[1]["ok"]
    assert "negative" in results[1]["error"]["detail"]
    trajectory = Trajectory.objects.get()
    assert (trajectory.prompt_tokens, trajectory.completion_tokens) == (30, 4)


def test_otlp_gen_ai_usage_fills_the_trajectory(bank):
    body = (FIXTURES / "otlp_openinference.json").read_bytes()
    spans = decode_export(body=body, content_type="application/json", content_encoding="", max_bytes=10**7)
    spans = [s for s in spans if is_agent_span(s)]
    data = trace_to_trajectory(spans, trace_id=spans[0]["trace_id"], closed_by="root_span")
    trajectory, _ = trajectory_ingest(bank=bank, token=None, data=data, input_format="otlp")
    assert (trajectory.prompt_tokens, trajectory.completion_tokens) == (240, 52)
    assert trajectory.metadata["otlp"]["usage"] == {"input_tokens": 240, "output_tokens": 52}


def test_otlp_spans_without_usage_leave_it_unknown(bank):
    spans = [span("a1", "invoke_agent helper", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "h"})]
    data = trace_to_trajectory(spans, trace_id=spans[0]["trace_id"], closed_by="root_span")
    assert data["usage"] is None
    trajectory, _ = trajectory_ingest(bank=bank, token=None, data=data, input_format="otlp")
    assert (trajectory.prompt_tokens, trajectory.completion_tokens) == (None, None)


def test_otlp_usage_beyond_one_runs_limit_is_a_warning_not_a_failure():
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 2 * 10**9, "gen_ai.usage.output_tokens": 1}
    spans = [span("a1", "chat model", attrs)]
    data = trace_to_trajectory(spans, trace_id=spans[0]["trace_id"], closed_by="root_span")
    assert data["usage"] is None
    assert any("not recorded as usage" in w for w in data["metadata"]["otlp"]["warnings"])
