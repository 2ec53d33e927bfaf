"""Span sets recorded from two REAL instrumentations (Pydantic AI's own, and
OpenInference's for the OpenAI Agents SDK; see
tests/trajectories/fixtures/record_otlp_instrumentations.py) go through the
live OTLP endpoint the way an exporter sends them, and become the trajectory a
reviewer expects: one per run, the agent's input as the task, thoughts, tool
calls with their arguments, tool results (errors flagged) and the final answer
in order, each with the duration of the span it came from."""

from __future__ import annotations

import base64
import copy
import gzip
import importlib.util
import json
from pathlib import Path

import httpx
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.conftest import skip_unless
from tests.trajectories.fixtures import record_otlp_instrumentations as recorded
from trajectories.models import Trajectory
from trajectories.otlp.models import TraceSpan

PATH = "/api/v1/otel/v1/traces"
FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def spans_by_end(document: dict) -> list[tuple[dict, dict, dict]]:
    """(resource, scope, span) in the order spans end, which is the order a span processor exports them."""
    triples = [
        (rs["resource"], ss["scope"], span)
        for rs in document["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    return sorted(triples, key=lambda t: int(t[2]["endTimeUnixNano"]))


def export_request(triples) -> dict:
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": scope, "spans": [span]}]}
            for resource, scope, span in triples
        ]
    }


def as_protobuf(document: dict) -> bytes:
    """The same export request in protobuf: OTLP/JSON's hex ids become bytes (base64 in protobuf's JSON mapping)."""
    document = copy.deepcopy(document)
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.ParseDict(document, ExportTraceServiceRequest()).SerializeToString()


def post_in_batches(url: str, token: str, document: dict, *, encoding: str) -> None:
    """Two exports as a batching span processor sends them: the spans that ended first, then the rest
    (the root, which ends last, among them). No trajectory may exist before the root arrives."""
    triples = spans_by_end(document)
    half = len(triples) // 2
    for batch, trajectories_after in ((triples[:half], 0), (triples[half:], 1)):
        request = export_request(batch)
        if encoding == "json":
            body, content_type = json.dumps(request).encode(), "application/json"
        else:
            body, content_type = as_protobuf(request), "application/x-protobuf"
        response = httpx.post(
            url + PATH,
            content=gzip.compress(body),
            headers={"Authorization": f"Bearer {token}", "Content-Type": content_type, "Content-Encoding": "gzip"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        assert Trajectory.objects.count() == trajectories_after


def durations(document: dict, name: str) -> list[int]:
    """The recorded durations (ms) of the spans called ``name``, in start order."""
    spans = sorted(
        (span for _r, _s, span in spans_by_end(document) if span["name"] == name),
        key=lambda span: int(span["startTimeUnixNano"]),
    )
    return [round((int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1_000_000) for s in spans]


def tools_in_start_order(document: dict, prefix: str) -> list[str]:
    spans = [span for _r, _s, span in spans_by_end(document) if span["name"].startswith(prefix)]
    return [s["name"].removeprefix(prefix) for s in sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_celery")  # the close a root span enqueues runs inline
def test_pydantic_ai_run_becomes_one_trajectory(live_server, bank, token):
    document = fixture("otlp_pydantic_ai.json")
    post_in_batches(live_server.url, token, document, encoding="json")

    trajectory = Trajectory.objects.get(bank=bank)
    assert trajectory.input_format == "otlp" and trajectory.external_id == "3e5a0c6d1b2f4a7e9c8d7b6a5f4e3d2c"
    assert trajectory.task == "What should I wear in Lyon tomorrow?"
    assert trajectory.agent == "weather_agent"
    assert trajectory.outcome == "success"  # from agent.run_sync(..., metadata={"reasoningbank.outcome": ...})
    assert trajectory.task_id == "weather-42"  # from the resource
    results = {
        "get_forecast": "Tomorrow in Lyon: 14°C, rain from 10:00, wind 20 km/h.",
        "get_uv_index": "pydantic_ai.exceptions.ToolRetryError: The UV service is down; answer without it.",
    }
    first, second = tools_in_start_order(document, "execute_tool ")  # the two tools ran in parallel
    steps = [(s["kind"], s.get("name", ""), s["content"]) for s in trajectory.steps]
    assert steps == [
        ("system", "", "You are a concise weather assistant. Use the tools."),
        ("user", "", "What should I wear in Lyon tomorrow?"),
        ("thought", "", "I need the forecast and the UV index for Lyon."),  # a ThinkingPart
        ("thought", "", "Let me check the forecast."),  # text beside tool calls is not the answer
        ("tool_call", "get_forecast", ""),
        ("tool_call", "get_uv_index", ""),
        ("tool_result", first, results[first]),
        ("tool_result", second, results[second]),
        ("action", "", "Take a waterproof jacket and a warm layer: 14°C and rain."),
    ]
    assert [json.loads(s["arguments"]) for s in trajectory.steps if s["kind"] == "tool_call"] == [{"city": "Lyon"}] * 2
    errors = [s["name"] for s in trajectory.steps if s.get("is_error")]
    assert errors == ["get_uv_index"]  # ModelRetry: an error status on the tool span
    assert trajectory.final_answer == "Take a waterproof jacket and a warm layer: 14°C and rain."
    chat = durations(document, "chat scripted-weather")
    tools = durations(document, f"execute_tool {first}") + durations(document, f"execute_tool {second}")
    assert [s.get("duration_ms") for s in trajectory.steps] == [None, None, chat[0], None, None, None, *tools, chat[1]]
    assert trajectory.metadata["otlp"]["spans"] == 5 and trajectory.metadata["otlp"]["models"] == ["scripted-weather"]
    assert TraceSpan.objects.count() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_celery")  # the close a root span enqueues runs inline
def test_openai_agents_openinference_run_becomes_one_trajectory(live_server, bank, token):
    document = fixture("otlp_openai_agents_openinference.json")
    post_in_batches(live_server.url, token, document, encoding="protobuf")

    trajectory = Trajectory.objects.get(bank=bank)
    assert trajectory.external_id == "7c1e2d3f4a5b6c7d8e9fa0b1c2d3e4f5"
    assert trajectory.task == "How do I rotate an API token?"  # the agent span has no input: the first user message
    assert trajectory.agent == "Docs assistant"  # agent.name, not the "Agent workflow" root
    assert (trajectory.outcome, trajectory.task_id) == ("success", "docs-7")  # set on the app's own span
    answer = "Create a new token with the same scopes, switch the agent to it, then revoke the old one."
    steps = [(s["kind"], s.get("name", ""), s["content"]) for s in trajectory.steps]
    assert steps == [
        ("system", "", "Answer from the documentation only."),
        ("user", "", "How do I rotate an API token?"),
        ("thought", "", "Search the docs first."),  # a reasoning summary (message_content.type = reasoning)
        ("thought", "", "Let me search the documentation."),
        ("tool_call", "search_docs", ""),
        (
            "tool_result",
            "search_docs",
            "Tokens: `rb_token create` makes one with scopes; `rb_token revoke <prefix>` revokes it at once.",
        ),
        ("tool_call", "revoke_token", ""),
        (
            "tool_result",
            "revoke_token",
            "An error occurred while running the tool. Please try again.\nError: Error running tool (non-fatal): "
            "{'tool_name': 'revoke_token', 'error': 'Tool execution failed. Error details are redacted.'}",
        ),
        ("action", "", answer),
    ]
    calls = [s for s in trajectory.steps if s["kind"] == "tool_call"]
    results = [s for s in trajectory.steps if s["kind"] == "tool_result"]
    assert [json.loads(s["arguments"]) for s in calls] == [{"query": "rotate token"}, {"prefix": "rb_old"}]
    # OpenInference tool spans carry no call id: each is matched to the model's call of that tool.
    assert [s["call_id"] for s in results] == [s["call_id"] for s in calls] == ["call_s1", "call_r1"]
    assert [s.get("is_error", False) for s in results] == [False, True]
    assert trajectory.final_answer == answer
    response = durations(document, "response")  # the LLM spans
    search, revoke = durations(document, "search_docs") + durations(document, "revoke_token")
    timed = [None, None, response[0], None, None, search, response[1], revoke, response[2]]
    assert [s.get("duration_ms") for s in trajectory.steps] == timed
    assert trajectory.metadata["otlp"]["usage"] == {"input_tokens": 300, "output_tokens": 66}
    assert trajectory.metadata["otlp"]["spans"] == 12
    assert TraceSpan.objects.count() == 0


def test_recorded_instrumentations_still_emit_this_shape():
    """Re-record both runs with the installed libraries and compare everything but ids, times and
    per-run UUIDs, so the fixtures are never a hand-typed guess of what the instrumentations emit."""
    missing = [
        module
        for module in ("pydantic_ai", "agents", "openinference.instrumentation.openai_agents")
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None
    ]
    skip_unless(not missing, f"{', '.join(missing)} not installed (pip install -e '.[dev]')")
    fresh = recorded.build_all()
    assert sorted(fresh) == sorted(recorded.FILES)
    for name, document in fresh.items():
        assert recorded.shape(document) == recorded.shape(fixture(name)), (
            f"{name} is not what the instrumentation emits now: run python -m "
            "tests.trajectories.fixtures.record_otlp_instrumentations"
        )
