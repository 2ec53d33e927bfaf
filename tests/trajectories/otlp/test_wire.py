"""OTLP/HTTP answers in the request's own encoding: JSON for a JSON request,
protobuf otherwise; errors as a google.rpc.Status carrying our machine code;
partial success only when there is something to say."""

import json

from django.test import RequestFactory
from django.urls import resolve
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from trajectories.otlp import wire


def _request(content_type: str):
    return RequestFactory().post("/", data=b"{}", content_type=content_type)


def test_an_error_is_a_status_in_protobuf_with_the_grpc_code_and_our_code():
    response = wire.status_response(_request(wire.PROTOBUF), 429, "Slow down.", code="rate_limited")
    assert (response.status_code, response["Content-Type"]) == (429, wire.PROTOBUF)
    status = status_pb2.Status.FromString(response.content)
    assert (status.code, status.message) == (8, "Slow down.")  # RESOURCE_EXHAUSTED
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info) and (info.reason, info.domain) == ("rate_limited", "reasoningbank")


def test_a_json_request_gets_json_whatever_its_charset():
    response = wire.status_response(_request("Application/JSON; charset=utf-8"), 415, "Send protobuf or JSON.")
    assert response["Content-Type"] == wire.JSON
    assert json.loads(response.content) == {"code": 3, "message": "Send protobuf or JSON."}  # no details, no code


def test_an_unknown_http_status_maps_to_grpc_unknown():
    status = status_pb2.Status.FromString(wire.status_response(_request(wire.PROTOBUF), 418, "teapot").content)
    assert status.code == 2


def test_export_answers_partial_success_only_when_something_was_rejected_or_said():
    clean = wire.export_response(_request(wire.PROTOBUF), rejected=0, warnings=[])
    assert clean.status_code == 200
    assert not ExportTraceServiceResponse.FromString(clean.content).HasField("partial_success")
    partial = wire.export_response(_request(wire.JSON), rejected=2, warnings=["span 1: bad.", "span 2: bad."])
    assert json.loads(partial.content) == {
        "partialSuccess": {"rejectedSpans": "2", "errorMessage": "span 1: bad. span 2: bad."}
    }


def test_only_the_otlp_route_counts_as_an_otlp_request():
    request = RequestFactory().post("/")
    assert not wire.is_otlp_request(request)  # not resolved yet
    request.resolver_match = resolve("/api/v1/otel/v1/traces")
    assert wire.is_otlp_request(request)
    request.resolver_match = resolve("/api/v1/trajectories")
    assert not wire.is_otlp_request(request)
