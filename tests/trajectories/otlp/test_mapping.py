"""The OTLP span → trajectory mapping (trajectories.otlp) on spans decoded
from OTLP/JSON, the services that buffer and close traces, and the trajectory
page of a trace (origin, trace id, per-step duration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from trajectories.models import Trajectory
from trajectories.otlp.buffer import otlp_spans_ingest
from trajectories.otlp.decode import decode_export, is_agent_span, is_root
from trajectories.otlp.mapping import STATUS_ERROR, trace_to_trajectory
from trajectories.otlp.models import TraceSpan

FIXTURES = Path(__file__).parent.parent / "fixtures"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def decoded(name: str) -> list[dict]:
    body = (FIXTURES / name).read_bytes()
    return decode_export(body=body, content_type="application/json", content_encoding="", max_bytes=10**7)


def span(span_id: str, name: str, attributes: dict, *, parent: str = "", start: int = 0, status: int = 0) -> dict:
    """One span in the stored shape (what decode_export returns)."""
    return {
        "trace_id": TRACE,
        "span_id": span_id,
        "parent_span_id": parent,
        "name": name,
        "kind": 1,
        "start": 1_000_000_000 + start * 1_000_000,
        "end": 1_000_000_000 + (start + 50) * 1_000_000,
        "attributes": attributes,
        "status": {"code": status, "message": "boom" if status == 2 else ""},
        "events": [],
        "resource": {"service.name": "svc"},
        "scope": "test",
    }


def test_fixture_spans_decode_with_hex_ids_and_plain_attribute_values():
    spans = decoded("otlp_genai.json")
    root = next(s for s in spans if is_root(s))
    assert root["trace_id"] == "0af7651916cd43dd8448eb211c80319c" and len(root["span_id"]) == 16
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    chat = next(s for s in spans if s["name"] == "chat gpt-4o")
    assert chat["attributes"]["gen_ai.response.finish_reasons"] == ["tool_call"]  # arrays stay lists
    assert chat["attributes"]["gen_ai.usage.input_tokens"] == 120  # ints stay ints
    tool = next(s for s in spans if s["name"] == "execute_tool get_uv_index")
    assert tool["status"]["code"] == STATUS_ERROR
    assert tool["events"][0]["attributes"]["exception.type"] == "ConnectionError"
    assert sorted(s["name"] for s in spans if not is_agent_span(s)) == ["POST", "POST"]


def test_openinference_agent_and_tool_without_call_id():
    spans = [s for s in decoded("otlp_openinference.json") if is_agent_span(s)]
    data = trace_to_trajectory(spans, trace_id=spans[0]["trace_id"], closed_by="root_span")
    assert data["agent"] == "Docs assistant"
    tool_call, tool_result = data["steps"][2], data["steps"][3]
    assert tool_call["call_id"] == tool_result["call_id"] == "call_s1"  # the TOOL span matched to the model's call
    assert tool_result["name"] == "search_docs" and tool_result["duration_ms"] == 210
    assert data["metadata"]["otlp"]["usage"] == {"input_tokens": 240, "output_tokens": 52}


def test_tool_results_from_model_input_when_no_tool_span():
    """LLM-only instrumentation: the tool result is known only from the next model call's input."""
    call = {"type": "tool_call", "id": "c9", "name": "lookup", "arguments": '{"id": 7}'}
    spans = [
        span(
            "a" * 16,
            "chat",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Q?"}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
            },
        ),
        span(
            "b" * 16,
            "chat",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(
                    [
                        {"role": "user", "parts": [{"type": "text", "content": "Q?"}]},
                        {"role": "assistant", "parts": [call]},
                        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c9", "response": "item 7"}]},
                    ]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "A."}]}]
                ),
            },
            start=100,
        ),
    ]
    data = trace_to_trajectory(spans, trace_id=TRACE, closed_by="root_span")
    assert [(s["kind"], s["content"]) for s in data["steps"]] == [
        ("user", "Q?"),
        ("tool_call", ""),
        ("tool_result", "item 7"),
        ("action", "A."),
    ]
    assert data["steps"][2]["name"] == "lookup"
    assert data["task"] == "Q?" and data["final_answer"] == "A."


def test_no_content_captured_still_makes_steps_and_a_task():
    spans = [
        span(
            "a" * 16, "invoke_agent planner", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
        ),
        span("b" * 16, "chat gpt-4o", {"gen_ai.operation.name": "chat"}, parent="a" * 16, start=5, status=2),
    ]
    data = trace_to_trajectory(spans, trace_id=TRACE, closed_by="idle_timeout")
    assert data["task"] == "planner"
    assert data["steps"] == [
        {"kind": "observation", "content": "The model call failed: boom", "is_error": True, "duration_ms": 50}
    ]


def test_reasoningbank_fields_are_validated_not_trusted():
    spans = [
        span(
            "a" * 16,
            "invoke_agent",
            {
                "gen_ai.operation.name": "invoke_agent",
                "reasoningbank.outcome": "maybe",
                "reasoningbank.retrieval_id": "not-a-uuid",
                "reasoningbank.group_id": "g-1",
            },
        )
    ]
    data = trace_to_trajectory(spans, trace_id=TRACE, closed_by="root_span")
    assert data["outcome"] is None and data["retrieval_id"] is None and data["group_id"] == "g-1"
    assert len(data["metadata"]["otlp"]["warnings"]) == 2


def test_huge_tool_result_is_clipped_not_refused():
    spans = [
        span(
            "a" * 16,
            "execute_tool dump",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "dump",
                "gen_ai.tool.call.result": "x" * 300_000,
            },
        )
    ]
    data = trace_to_trajectory(spans, trace_id=TRACE, closed_by="root_span")
    result = data["steps"][1]
    assert len(result["content"]) <= 200_000 and "cut: 300000 characters" in result["content"]


@pytest.mark.django_db
@pytest.mark.usefixtures("eager_celery")
def test_ingest_is_idempotent_and_closes_on_the_root(bank, django_capture_on_commit_callbacks):
    spans = decoded("otlp_genai.json")
    root = next(s for s in spans if is_root(s))
    children = [s for s in spans if s is not root]
    first = otlp_spans_ingest(bank=bank, token=None, spans=children)
    again = otlp_spans_ingest(bank=bank, token=None, spans=children)
    assert (first.accepted, first.ignored, again.accepted) == (4, 2, 4)
    assert TraceSpan.objects.filter(bank=bank).count() == 4
    with django_capture_on_commit_callbacks(execute=True):  # the close a worker runs after commit
        closed = otlp_spans_ingest(bank=bank, token=None, spans=[root])
    assert closed.closing == [root["trace_id"]]
    assert [t.external_id for t in Trajectory.objects.filter(bank=bank)] == [root["trace_id"]]
    assert Trajectory.objects.get(bank=bank).step_count == 9
    assert not TraceSpan.objects.exists()


@pytest.mark.django_db
@pytest.mark.usefixtures("eager_celery")
def test_trajectory_page_shows_the_trace_and_step_durations(client, owner, bank, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        otlp_spans_ingest(bank=bank, token=None, spans=decoded("otlp_genai.json"))
    trajectory = Trajectory.objects.get(bank=bank)
    client.force_login(owner)
    html = client.get(
        reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
    ).content.decode()
    assert "OpenTelemetry trace (OTLP)" in html
    assert f"trace id <code>{trajectory.external_id}</code>" in html
    assert "5 spans from <code>weather-agent</code> in 2400 ms" in html
    assert "· 890 ms</span>" in html and "· 1.2 s</span>" in html
