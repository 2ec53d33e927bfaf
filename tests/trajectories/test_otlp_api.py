"""OTLP/HTTP trace ingestion over real HTTP: the real OpenTelemetry
SDK exports to the live server (protobuf, and gzip), OTLP/JSON bodies made by
the SDK's own encoder are posted by hand, span sets in the conventions of two
instrumentations (tests/trajectories/fixtures/otlp_genai.json and
otlp_openinference.json, attribute names typed by hand; the real recordings are
in test_otlp_recorded.py) are split across several exports, and garbage, oversized, unauthorized bodies are refused with a
google.rpc.Status in the request's encoding."""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import httpx
import pytest
import time_machine
from django.utils import timezone
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from tests import factories
from tests.trajectories.fixtures import make_otlp_fixtures
from trajectories.models import Trajectory
from trajectories.otlp.decode import to_otlp_json
from trajectories.otlp.models import TraceSpan
from trajectories.otlp.wire import JSON, PROTOBUF
from trajectories.pipeline.sweeper import pipeline_sweep

# The server answers on a loaded machine too: a generous timeout instead of httpx's 5 s.
http_post = functools.partial(httpx.post, timeout=60)

PATH = "/api/v1/otel/v1/traces"
FIXTURES = Path(__file__).parent / "fixtures"

# Eager Celery: the close a root span enqueues runs in the request thread, as a worker would run it.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def spans_of(document: dict) -> list[tuple[dict, dict, dict]]:
    """(resource, scope, span) triples of an OTLP/JSON document."""
    return [
        (rs["resource"], ss["scope"], span)
        for rs in document["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def document_of(triples) -> dict:
    """One OTLP/JSON export request holding ``triples`` (one resource/scope group per span)."""
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": scope, "spans": [span]}]}
            for resource, scope, span in triples
        ]
    }


def post_json(url: str, token: str, document, **headers) -> httpx.Response:
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    return http_post(
        url + PATH,
        content=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers},
        timeout=30,
    )


def agent_run(tracer, task: str, answer: str, *, tool_error: bool = False) -> None:
    """A small agent run as GenAI semconv instrumentations record it (real SDK spans)."""
    with tracer.start_as_current_span(
        "invoke_agent helper",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "helper",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": task}]}]),
        },
    ) as root:
        with (
            tracer.start_as_current_span(
                "chat gpt-4o",
                kind=SpanKind.CLIENT,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [
                                    {"type": "text", "content": "Searching first."},
                                    {"type": "tool_call", "id": "c1", "name": "search", "arguments": {"q": task}},
                                ],
                            }
                        ]
                    ),
                    "gen_ai.usage.input_tokens": 10,
                    "gen_ai.usage.output_tokens": 5,
                },
            ),
            tracer.start_as_current_span("GET", kind=SpanKind.CLIENT, attributes={"http.request.method": "GET"}),
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool search",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.call.arguments": json.dumps({"q": task}),
                "gen_ai.tool.call.result": "3 results",
            },
        ) as tool:
            if tool_error:
                tool.set_status(Status(StatusCode.ERROR, "search backend timed out"))
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                ),
            },
        ):
            pass
        root.set_attribute("reasoningbank.outcome", "success")


def sdk(url: str, token: str, **exporter_kwargs):
    exporter = OTLPSpanExporter(
        endpoint=url + PATH, headers={"Authorization": f"Bearer {token}"}, timeout=30, **exporter_kwargs
    )
    provider = TracerProvider(resource=Resource({"service.name": "test-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


# --- the real exporter ----------------------------------------------------------------------


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_sdk_exporter_protobuf_makes_one_trajectory(live_server, bank, token, compression):
    provider, _exporter = sdk(live_server.url, token, compression=compression)
    agent_run(provider.get_tracer("t"), "Find the cheapest flight to Porto", "May 12, 48 EUR")
    provider.shutdown()

    trajectory = Trajectory.objects.get(bank=bank)
    assert trajectory.input_format == "otlp"
    assert trajectory.task == "Find the cheapest flight to Porto"
    assert trajectory.final_answer == "May 12, 48 EUR"
    assert trajectory.outcome == "success"
    assert trajectory.agent == "helper"
    assert [s["kind"] for s in trajectory.steps] == ["thought", "tool_call", "tool_result", "action"]
    assert trajectory.steps[1]["name"] == "search" and json.loads(trajectory.steps[1]["arguments"]) == {
        "q": "Find the cheapest flight to Porto"
    }
    assert all(isinstance(trajectory.steps[i].get("duration_ms"), int) for i in (0, 2, 3))
    assert trajectory.external_id == trajectory.metadata["otlp"]["trace_id"] and len(trajectory.external_id) == 32
    assert trajectory.metadata["otlp"]["usage"] == {"input_tokens": 10, "output_tokens": 5}
    assert TraceSpan.objects.count() == 0  # the buffer is gone once the trace is a trajectory


def test_sdk_exporter_one_span_per_export_and_reexport_is_idempotent(live_server, bank, token):
    # SimpleSpanProcessor exports each span on its own: the trace arrives over 6 requests, root last.
    provider, _exporter = sdk(live_server.url, token)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    agent_run(provider.get_tracer("t"), "Summarize the meeting", "Three decisions were made.", tool_error=True)
    assert Trajectory.objects.filter(bank=bank).count() == 1

    # A retrying exporter sends the whole trace again: the same trajectory, nothing buffered.
    provider2, again = sdk(live_server.url, token)
    assert again.export(memory.get_finished_spans()) == SpanExportResult.SUCCESS
    provider.shutdown()
    provider2.shutdown()  # closes its exporter's kept-alive connection (and the live server's database session)
    trajectory = Trajectory.objects.get(bank=bank)
    assert TraceSpan.objects.count() == 0
    tool_result = next(s for s in trajectory.steps if s["kind"] == "tool_result")
    assert tool_result["is_error"] is True and "search backend timed out" in tool_result["content"]


# --- OTLP/JSON, by hand, from the SDK's encoder ---------------------------------------------


def test_json_body_from_the_sdk_encoder(live_server, bank, token):
    provider = TracerProvider(resource=Resource({"service.name": "json-agent"}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    agent_run(provider.get_tracer("t"), "Translate the README to French", "Done: README.fr.md")
    document = to_otlp_json(encode_spans(memory.get_finished_spans()))

    response = post_json(live_server.url, token, document)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {}  # nothing rejected, nothing to say
    trajectory = Trajectory.objects.get(bank=bank)
    assert trajectory.task == "Translate the README to French"
    assert trajectory.metadata["otlp"]["service"] == "json-agent"


@pytest.mark.parametrize(
    "name, task, kinds",
    [
        (
            "otlp_genai.json",
            "What should I wear in Lyon tomorrow?",
            ["system", "user", "thought", "thought", "tool_call", "tool_call", "tool_result", "tool_result", "action"],
        ),
        (
            "otlp_openinference.json",
            "How do I rotate an API token?",
            ["system", "user", "tool_call", "tool_result", "action"],
        ),
    ],
)
def test_recorded_instrumentations_split_across_exports(live_server, bank, token, name, task, kinds):
    triples = spans_of(fixture(name))
    root = next(t for t in triples if not t[2].get("parentSpanId"))
    children = [t for t in triples if t is not root]
    # Three exports: two halves of the children (one is re-sent), then the root.
    for part in (children[: len(children) // 2], children, [root]):
        response = post_json(live_server.url, token, document_of(part))
        assert response.status_code == 200, response.text
        if part is not children:
            assert Trajectory.objects.filter(bank=bank).count() == (1 if part == [root] else 0)
    trajectory = Trajectory.objects.get(bank=bank)
    assert trajectory.task == task
    assert [s["kind"] for s in trajectory.steps] == kinds
    assert trajectory.outcome == "success"
    assert trajectory.final_answer and trajectory.final_answer == trajectory.steps[-1]["content"]
    # The HTTP client / database spans of the fixture were not agent work: never stored, never steps.
    assert trajectory.metadata["otlp"]["spans"] == len(triples) - (2 if name == "otlp_genai.json" else 1)
    assert TraceSpan.objects.count() == 0


def test_task_id_from_the_resource_and_durations(live_server, bank, token):
    response = post_json(live_server.url, token, fixture("otlp_genai.json"))
    assert response.status_code == 200
    trajectory = Trajectory.objects.get(bank=bank)
    assert trajectory.task_id == "weather-42"
    durations = [s.get("duration_ms") for s in trajectory.steps]
    assert durations == [None, None, 890, None, None, None, 300, 100, 1160]


# --- idle traces ------------------------------------------------------------------------------


def test_trace_without_root_is_closed_by_the_sweeper(live_server, bank, token, settings):
    triples = spans_of(fixture("otlp_openinference.json"))
    children = [t for t in triples if t[2].get("parentSpanId")]
    assert post_json(live_server.url, token, document_of(children)).status_code == 200
    assert pipeline_sweep(otlp_idle_seconds=3600).otlp_traces_closed == []  # not idle yet
    assert Trajectory.objects.filter(bank=bank).count() == 0

    report = pipeline_sweep(otlp_idle_seconds=0)
    trace_id = children[0][2]["traceId"]
    assert report.otlp_traces_closed == [(bank.pk, trace_id)]
    trajectory = Trajectory.objects.get(bank=bank)
    assert trajectory.external_id == trace_id and trajectory.metadata["otlp"]["closed_by"] == "idle_timeout"
    assert trajectory.task == "How do I rotate an API token?"
    # The root arrives late: it is recognised as the same trace, no second trajectory.
    root = next(t for t in triples if not t[2].get("parentSpanId"))
    response = post_json(live_server.url, token, document_of([root]))
    assert response.status_code == 200 and "already recorded" in response.json()["partialSuccess"]["errorMessage"]
    assert Trajectory.objects.filter(bank=bank).count() == 1


# --- isolation and refusals -------------------------------------------------------------------


def test_another_banks_token_never_merges_traces(live_server, bank, token, other_bank):
    other_token = factories.make_token(other_bank)
    triples = spans_of(fixture("otlp_genai.json"))
    root = next(t for t in triples if not t[2].get("parentSpanId"))
    children = [t for t in triples if t is not root]
    assert post_json(live_server.url, token, document_of(children)).status_code == 200
    # The other bank sends the root of the same trace id: it closes only its own trace, which has no children.
    assert post_json(live_server.url, other_token, document_of([root])).status_code == 200
    theirs = Trajectory.objects.get(bank=other_bank)
    assert [s["content"] for s in theirs.steps] == ["[invoke_agent weather_agent: no content recorded]"]
    assert not Trajectory.objects.filter(bank=bank).exists()
    assert TraceSpan.objects.filter(bank=bank).count() == len(children) - 2  # ours wait (HTTP spans ignored)


def test_wrong_scope_is_403_status_in_the_request_encoding(live_server, bank):
    retrieve_only = factories.make_token(bank, scopes=("retrieve",))
    response = post_json(live_server.url, retrieve_only, fixture("otlp_genai.json"))
    assert response.status_code == 403
    assert "ingest" in response.json()["message"]
    provider, exporter = sdk(live_server.url, retrieve_only)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("x", attributes={"gen_ai.operation.name": "chat"}):
        pass
    assert exporter.export(memory.get_finished_spans()) == SpanExportResult.FAILURE
    provider.shutdown()
    response = http_post(
        live_server.url + PATH,
        content=encode_spans(memory.get_finished_spans()).SerializeToString(),
        headers={"Authorization": f"Bearer {retrieve_only}", "Content-Type": PROTOBUF},
    )
    assert response.status_code == 403 and response.headers["Content-Type"] == PROTOBUF
    assert "ingest" in status_pb2.Status.FromString(response.content).message
    assert not Trajectory.objects.exists()


def test_no_token_is_401(live_server, db):
    response = http_post(live_server.url + PATH, content=b"{}", headers={"Content-Type": "application/json"})
    assert response.status_code == 401 and "Bearer" in response.json()["message"]


@pytest.mark.parametrize(
    "content_type, body, encoding",
    [
        (PROTOBUF, b"\xff\xff\xff\xff not protobuf", ""),
        (JSON, b"{not json", ""),
        (JSON, b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}', ""),
        (JSON, b'{"resourceSpans": "many"}', ""),
        (PROTOBUF, b"\x1f\x8b\x08 truncated gzip", "gzip"),
    ],
)
def test_garbage_is_400_with_a_status(live_server, token, content_type, body, encoding):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": content_type}
    if encoding:
        headers["Content-Encoding"] = encoding
    response = http_post(live_server.url + PATH, content=body, headers=headers)
    assert response.status_code == 400, response.text
    assert response.headers["Content-Type"] == content_type
    if content_type == JSON:
        assert response.json()["message"]
    else:
        assert "not" in status_pb2.Status.FromString(response.content).message
    assert not TraceSpan.objects.exists()


def test_oversized_and_gzip_bombs_are_413(live_server, token, settings):
    settings.RB_API_MAX_BODY_BYTES = 10_000
    big = json.dumps({"resourceSpans": [], "pad": "x" * 20_000}).encode()
    response = post_json(live_server.url, token, big)
    assert response.status_code == 413 and "limit" in response.json()["message"]
    # Small on the wire, huge inflated (beyond 4 × the limit).
    bomb = gzip.compress(json.dumps({"resourceSpans": [], "pad": "x" * 200_000}).encode())
    assert len(bomb) < 10_000
    response = post_json(live_server.url, token, bomb, **{"Content-Encoding": "gzip"})
    assert response.status_code == 413
    response = http_post(
        live_server.url + PATH,
        content=b"\x00" * 20_000,
        headers={"Authorization": f"Bearer {token}", "Content-Type": PROTOBUF},
    )
    assert response.status_code == 413
    assert "limit" in status_pb2.Status.FromString(response.content).message


def test_unknown_media_type_is_415(live_server, token):
    response = http_post(
        live_server.url + PATH,
        content=b"hello",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "text/plain"},
    )
    assert response.status_code == 415
    assert "application/x-protobuf" in status_pb2.Status.FromString(response.content).message


def test_invalid_ids_are_rejected_as_partial_success(live_server, bank, token):
    triples = spans_of(fixture("otlp_openinference.json"))
    broken = [(r, s, {**span, "spanId": "00"}) for r, s, span in triples[:2]]
    response = post_json(live_server.url, token, document_of(broken + triples[2:]))
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2" and "invalid span_id" in partial["errorMessage"]
    # Protobuf answers carry the same partial_success.
    response = http_post(
        live_server.url + PATH,
        content=json.dumps(document_of(broken)).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": JSON},
    )
    assert response.json()["partialSuccess"]["rejectedSpans"] == "2"


def test_rate_limited_is_429_with_retry_after(live_server, bank):
    bank.rate_limit_per_minute = 1
    bank.save(update_fields=["rate_limit_per_minute"])
    token = factories.make_token(bank)
    document = document_of(spans_of(fixture("otlp_genai.json"))[:1])
    with time_machine.travel(timezone.now().replace(second=20, microsecond=0), tick=False):  # 20 s into a window
        assert post_json(live_server.url, token, document).status_code == 200
        response = http_post(
            live_server.url + PATH,
            content=b"",
            headers={"Authorization": f"Bearer {token}", "Content-Type": PROTOBUF},
        )
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "40"  # the seconds left in the one-minute window
    assert "Rate limit" in status_pb2.Status.FromString(response.content).message


def test_protobuf_success_answer_is_an_export_response(live_server, token):
    response = http_post(
        live_server.url + PATH,
        content=b"",
        headers={"Authorization": f"Bearer {token}", "Content-Type": PROTOBUF},
    )
    assert response.status_code == 200 and response.headers["Content-Type"] == PROTOBUF
    assert not ExportTraceServiceResponse.FromString(response.content).HasField("partial_success")


def test_otlp_fixtures_match_the_sdk():
    for name, document in make_otlp_fixtures.build_all().items():
        assert document == fixture(name), (
            f"{name} is stale: run python -m tests.trajectories.fixtures.make_otlp_fixtures"
        )
