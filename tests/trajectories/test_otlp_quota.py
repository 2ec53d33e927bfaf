"""OTLP exports past the token's daily ingest quota: the real OpenTelemetry
exporter is answered with ``partialSuccess`` naming the rejected spans and
the quota (a success that must not be retried, as OTLP/HTTP says of partial
success), and nothing of those traces is buffered."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from accounts.teams.banks import bank_update_settings
from tests import factories
from tests.trajectories.test_otlp_api import PATH, agent_run, http_post, post_json, sdk
from trajectories.models import Trajectory
from trajectories.otlp.decode import to_otlp_json
from trajectories.otlp.models import TraceSpan
from trajectories.otlp.wire import PROTOBUF

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]

AGENT_SPANS = 4  # agent_run: the root, two chats and a tool call (its GET span is not agent work)


def _runs(*tasks: str) -> list:
    provider = TracerProvider(resource=Resource({"service.name": "quota-agent"}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for task in tasks:
        agent_run(provider.get_tracer("t"), task, "done")
    provider.shutdown()
    return list(memory.get_finished_spans())


@pytest.fixture
def spent(bank, owner, client):
    """A token whose daily quota of 1 trajectory is spent by a REST post."""
    token = factories.make_token(bank)
    bank_update_settings(bank=bank, actor=owner, ingest_quota_per_day=1)
    body = {"task": "Find the opening hours.", "steps": factories.STEPS}
    sent = client.post(
        "/api/v1/trajectories", data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert sent.status_code == 202
    return token


def test_the_real_exporter_past_the_quota_buffers_nothing(live_server, bank, spent):
    children = [span for span in _runs("Find the cheapest flight to Porto") if span.parent is not None]
    provider, exporter = sdk(live_server.url, spent)
    assert exporter.export(children) == SpanExportResult.SUCCESS  # a partial success: not retried
    provider.shutdown()
    assert TraceSpan.objects.count() == 0  # nothing waits for a root that could never become a trajectory
    assert Trajectory.objects.filter(bank=bank).count() == 1  # the REST post only


def test_an_export_past_the_quota_answers_partial_success_with_its_rejected_spans(live_server, bank, spent):
    request = encode_spans(_runs("Summarize the meeting"))
    response = http_post(
        live_server.url + PATH,
        content=request.SerializeToString(),
        headers={"Authorization": f"Bearer {spent}", "Content-Type": PROTOBUF},
    )
    assert response.status_code == 200
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_spans == AGENT_SPANS + 1  # every span of the trace, its GET span too
    assert "daily ingest quota" in partial.error_message and "00:00 UTC" in partial.error_message
    assert TraceSpan.objects.count() == 0 and Trajectory.objects.filter(bank=bank).count() == 1


def test_an_export_completes_only_as_many_traces_as_the_quota_has_left(live_server, bank, owner):
    token = factories.make_token(bank)
    bank_update_settings(bank=bank, actor=owner, ingest_quota_per_day=1)
    document = to_otlp_json(encode_spans(_runs("First task", "Second task")))
    response = post_json(live_server.url, token, document)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == str(AGENT_SPANS + 1) and "daily ingest quota" in partial["errorMessage"]
    assert list(Trajectory.objects.filter(bank=bank).values_list("task", flat=True)) == ["First task"]
    assert TraceSpan.objects.count() == 0


def test_the_last_trajectory_of_the_quota_leaves_no_room_for_another_traces_spans(live_server, bank, owner):
    token = factories.make_token(bank)
    bank_update_settings(bank=bank, actor=owner, ingest_quota_per_day=1)
    first, second = _runs("First task"), _runs("Second task")
    waiting = [span for span in second if span.parent is not None]  # the second trace, its root still to come
    document = to_otlp_json(encode_spans(first + waiting))
    partial = post_json(live_server.url, token, document).json()["partialSuccess"]
    assert partial["rejectedSpans"] == str(len(waiting)) and "daily ingest quota" in partial["errorMessage"]
    assert list(Trajectory.objects.filter(bank=bank).values_list("task", flat=True)) == ["First task"]
    assert TraceSpan.objects.count() == 0
