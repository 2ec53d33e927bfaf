"""Fuzz of the OTLP endpoint: hypothesis generates spans whose attributes —
every key the mapping (trajectories.otlp) reads — hold any OTLP value type
(string, JSON text of any shape, int, double with inf and NaN, bool, bytes,
array, kvlist, empty), as root and child spans, with error statuses and
exception events, and sends them through the real endpoint (OTLP/JSON or
protobuf), then sweeps. The endpoint never answers 5xx, the close never
fails on a value, and the sweep never raises."""

from __future__ import annotations

import base64
import copy
import json
import math
import string

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests import factories
from trajectories.models import Trajectory
from trajectories.otlp.decode import is_agent_span
from trajectories.pipeline.sweeper import pipeline_sweep

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery", "no_llm")]

PATH = "/api/v1/otel/v1/traces"
MAX_EXAMPLES = 40  # a fixed seed and a modest count: the run stays well under a minute
ROOT = "a1" * 8

# Every attribute key the mapping reads (OpenInference's flattened keys with indexes 0 and 1).
KEYS = [
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.response.model",
    "gen_ai.request.model",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "openinference.span.kind",
    "llm.token_count.prompt",
    "llm.token_count.completion",
    "llm.model_name",
    "llm.input_messages.0.message.role",
    "llm.input_messages.0.message.content",
    "llm.input_messages.0.message.contents.0.message_content.type",
    "llm.input_messages.0.message.contents.0.message_content.text",
    "llm.input_messages.1.message.role",
    "llm.input_messages.1.message.tool_call_id",
    "llm.input_messages.1.message.name",
    "llm.output_messages.0.message.role",
    "llm.output_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
    "tool.name",
    "tool_name",
    "tool_call.id",
    "tool_call_id",
    "tool_arguments",
    "tool_response",
    "input.value",
    "output.value",
    "agent_name",
    "agent.name",
    "pydantic_ai.all_messages",
    "final_result",
    "metadata",
    "reasoningbank.outcome",
    "reasoningbank.task_id",
    "reasoningbank.group_id",
    "reasoningbank.retrieval_id",
]
EVENT_KEYS = ["exception.type", "exception.message"]
RESOURCE_KEYS = ["service.name", "reasoningbank.task_id", "reasoningbank.outcome"]
# OTLP/JSON writes non-finite doubles as these strings (json.dumps would write bare tokens).
NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
WORDS = ["user", "assistant", "tool", "system", "text", "tool_call", "tool_call_response", "chat", "invoke_agent"]

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(WORDS)
)
json_any = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["role", "parts", *WORDS]), inner),
    max_leaves=8,
)
# Message lists of the conventions' shape whose fields hold any type.
message_like = st.lists(
    st.fixed_dictionaries(
        {"role": json_any | st.sampled_from(WORDS)},
        optional={"parts": json_any | st.lists(st.dictionaries(st.sampled_from(["type", "content", "id"]), json_any))},
    ),
    max_size=3,
)
text_value = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "[", "{", "[" * 300, "Infinity", "NaN", "9" * 5000, "²", "-5", "12"]),
    json_any.map(json.dumps),
    message_like.map(json.dumps),
)


def any_value() -> st.SearchStrategy[dict]:
    """An OTLP/JSON AnyValue of any type."""
    scalar = st.one_of(
        text_value.map(lambda v: {"stringValue": v}),
        st.integers(min_value=-(2**63), max_value=2**63 - 1).map(lambda v: {"intValue": str(v)}),
        st.floats().map(lambda v: {"doubleValue": v if math.isfinite(v) else NON_FINITE[str(v)]}),
        st.booleans().map(lambda v: {"boolValue": v}),
        st.binary(max_size=8).map(lambda v: {"bytesValue": base64.b64encode(v).decode()}),
        st.just({}),
    )
    return st.recursive(
        scalar,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3).map(lambda vs: {"arrayValue": {"values": vs}}),
            st.dictionaries(st.sampled_from(WORDS), inner, max_size=3).map(
                lambda d: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in d.items()]}}
            ),
        ),
        max_leaves=5,
    )


def attributes(keys: list[str], min_size: int = 0):
    pairs = st.dictionaries(st.sampled_from(keys), any_value(), min_size=min_size, max_size=8)
    return pairs.map(lambda d: [{"key": k, "value": v} for k, v in d.items()])


span_strategy = st.fixed_dictionaries(
    {
        "root": st.booleans(),
        "attributes": attributes(KEYS, min_size=1),
        "status": st.sampled_from([0, 1, 2]),
        "events": st.lists(attributes(EVENT_KEYS).map(lambda a: {"name": "exception", "attributes": a}), max_size=2),
        "start": st.integers(min_value=0, max_value=2**62),
        "length": st.integers(min_value=-(10**9), max_value=10**12),
    }
)


def document(trace_id: str, spans: list[dict], resource: list) -> dict:
    otlp_spans = []
    for n, spec in enumerate(spans):
        span = {
            "traceId": trace_id,
            "spanId": ROOT if spec["root"] else f"{n + 2:016x}",
            "name": f"span {n}",
            "startTimeUnixNano": str(spec["start"]),
            "endTimeUnixNano": str(max(spec["start"] + spec["length"], 0)),
            "attributes": spec["attributes"],
            "status": {"code": spec["status"], "message": ""},
            "events": spec["events"],
        }
        if not spec["root"]:
            span["parentSpanId"] = ROOT
        otlp_spans.append(span)
    return {
        "resourceSpans": [
            {"resource": {"attributes": resource}, "scopeSpans": [{"scope": {"name": "fuzz"}, "spans": otlp_spans}]}
        ]
    }


def as_protobuf(doc: dict) -> bytes:
    doc = copy.deepcopy(doc)
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.ParseDict(doc, ExportTraceServiceRequest()).SerializeToString()


@pytest.fixture
def fuzz_token(db):
    return factories.make_token(factories.make_bank(rate_limit_per_minute=0))  # the fuzz must not be throttled


@given(
    spans=st.lists(span_strategy, min_size=1, max_size=3),
    resource=attributes(RESOURCE_KEYS),
    protobuf=st.booleans(),
    trace=st.text(alphabet=string.hexdigits[:16], min_size=31, max_size=31),
)
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_any_attribute_values_never_break_the_endpoint_or_the_sweep(
    client, fuzz_token, django_capture_on_commit_callbacks, spans, resource, protobuf, trace
):
    trace_id = "1" + trace  # never all zeros
    doc = document(trace_id, spans, resource)
    body = as_protobuf(doc) if protobuf else json.dumps(doc).encode()
    content_type = "application/x-protobuf" if protobuf else "application/json"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(PATH, data=body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {fuzz_token}")
    assert response.status_code == 200, response.content[:500]

    with django_capture_on_commit_callbacks(execute=True):
        report = pipeline_sweep(otlp_idle_seconds=0)
    assert report.otlp_traces_failed == []
    # A trace with agent work is now a trajectory (closed by its root span, or swept).
    if any(is_agent_span({"attributes": {a["key"]: None for a in spec["attributes"]}}) for spec in spans):
        assert Trajectory.objects.filter(external_id=trace_id).exists()
