"""OTLP/HTTP answers: which requests are OTLP, and their success and error
bodies (``ExportTraceServiceResponse`` / ``google.rpc.Status``) in the
request's encoding."""

from __future__ import annotations

from django.http import HttpResponse
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

URL_NAME = "otlp_traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# gRPC codes for the Status body (clients may log them; the HTTP status is what counts).
_GRPC_CODE = {400: 3, 401: 16, 403: 7, 404: 5, 413: 3, 415: 3, 422: 3, 429: 8, 500: 13, 503: 14}


def is_otlp_request(request) -> bool:
    match = getattr(request, "resolver_match", None)
    return match is not None and match.url_name == URL_NAME


def _media_type(request) -> str:
    return (request.META.get("CONTENT_TYPE") or "").split(";")[0].strip().lower()


def response_for(request, message, status: int = 200) -> HttpResponse:
    """``message`` serialized in the request's encoding (JSON for a JSON
    request, protobuf otherwise), as OTLP/HTTP asks of every answer."""
    if _media_type(request) == JSON:
        body = json_format.MessageToJson(message, indent=None)
        return HttpResponse(body, status=status, content_type=JSON)
    return HttpResponse(message.SerializeToString(), status=status, content_type=PROTOBUF)


def status_response(request, status: int, message: str, code: str = "") -> HttpResponse:
    """An error as OTLP/HTTP clients read it: a ``google.rpc.Status``; our
    machine ``code`` (the ``code`` of every other API error) rides along as
    the reason of a ``google.rpc.ErrorInfo`` detail."""
    rpc_status = status_pb2.Status(code=_GRPC_CODE.get(status, 2), message=message)
    if code:
        rpc_status.details.add().Pack(error_details_pb2.ErrorInfo(reason=code, domain="reasoningbank"))
    return response_for(request, rpc_status, status)


def export_response(request, *, rejected: int, warnings: list[str]) -> HttpResponse:
    """200 with ``partial_success`` when spans were rejected or there is something to say."""
    response = ExportTraceServiceResponse()
    if rejected or warnings:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = " ".join(warnings)[:4000]
    return response_for(request, response)
