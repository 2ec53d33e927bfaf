"""Decoding an OTLP/HTTP export into the stored form of its spans.

Protobuf (``application/x-protobuf``) or OTLP/JSON (``application/json``: ids
in hex, enums as numbers, camelCase or snake_case keys), optionally
gzip/deflate-compressed, read with ``opentelemetry-proto``'s own messages. A
span becomes a plain dict (see :func:`_span_dict`) that is stored as it is in
``TraceSpan.span``: JSON values only (non-finite doubles as their OTLP/JSON
text, NUL scrubbed), and at most MAX_SPAN_CHARS characters of attribute
values, so closing a trace of RB_MAX_STEPS spans reads a bounded amount."""

from __future__ import annotations

import base64
import json
import math
import zlib
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from reasoningbank_site.errors import TooLarge, Undecodable, UnsupportedMediaType
from reasoningbank_site.text import cut_text, scrub_text
from trajectories.otlp.wire import JSON, PROTOBUF

# A compressed body may inflate to this many times the body limit (OTLP/JSON compresses ~10×).
MAX_INFLATE_FACTOR = 4
# The attribute values (span, event and resource attributes together) a stored span keeps; the
# largest values are cut first, with cut_text's marker. Five step contents (MAX_STEP_CONTENT_CHARS).
MAX_SPAN_CHARS = 1_000_000
# No value is cut shorter than this, however many attributes share the budget.
_MIN_VALUE_CHARS = 1_000
_MAX_NAME_CHARS = 2_000

_OPENINFERENCE_PREFIXES = ("llm.", "tool.", "tool_call.", "input.", "output.", "agent.", "graph.node.")
_PYDANTIC_AI_KEYS = (
    "pydantic_ai.all_messages",
    "final_result",
    "tool_arguments",
    "tool_response",
    "all_messages_events",
)


def decode_export(*, body: bytes, content_type: str, content_encoding: str, max_bytes: int) -> list[dict]:
    """The spans of one export request as dicts (see :func:`_span_dict`).

    Raises UnsupportedMediaType for a content type or encoding other than
    protobuf/JSON and gzip/deflate/identity; TooLarge when the inflated body
    exceeds ``max_bytes`` × MAX_INFLATE_FACTOR; Undecodable when the body is
    not what it claims to be."""
    media = content_type.split(";")[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        raise UnsupportedMediaType(
            f"Content-Type {media or '(none)'} is not OTLP/HTTP: send {PROTOBUF} or {JSON}.",
        )
    data = _inflate(body, content_encoding.strip().lower(), max_bytes * MAX_INFLATE_FACTOR)
    request = ExportTraceServiceRequest()
    if media == PROTOBUF:
        try:
            request.ParseFromString(data)
        except (DecodeError, RuntimeWarning, ValueError) as exc:
            raise Undecodable(f"The body is not an OTLP ExportTraceServiceRequest in protobuf ({exc}).") from None
    else:
        try:
            document = json.loads(data)
            if not isinstance(document, dict):
                raise ValueError("the top level must be an object")
            json_format.ParseDict(_hex_ids_to_base64(document), request, ignore_unknown_fields=True)
        except (ValueError, RecursionError, json_format.ParseError) as exc:
            raise Undecodable(f"The body is not an OTLP ExportTraceServiceRequest in JSON ({exc}).") from None
    spans = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(_span_dict(span, resource=resource, scope=scope_spans.scope.name))
    return spans


def _inflate(body: bytes, encoding: str, limit: int) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise UnsupportedMediaType(f"Content-Encoding {encoding} is not supported: send gzip, deflate or none.")
    # wbits: 16+ reads a gzip header, plain MAX_WBITS a zlib (deflate) stream.
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise Undecodable(f"The body is not valid {encoding} ({exc}).") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise TooLarge(f"The body inflates to more than {limit} bytes; send smaller batches.")
    if not inflater.eof:
        raise Undecodable(f"The {encoding} body is truncated.")
    return data


_ID_KEYS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id")


def _hex_ids_to_base64(document: dict) -> dict:
    """OTLP/JSON writes trace and span ids in hex where protobuf's JSON mapping expects base64."""
    for resource_spans in _list(document, "resourceSpans", "resource_spans"):
        for scope_spans in _list(resource_spans, "scopeSpans", "scope_spans"):
            for span in _list(scope_spans, "spans"):
                for holder in (span, *_list(span, "links")):
                    for key in _ID_KEYS:
                        if isinstance(holder, dict) and isinstance(holder.get(key), str):
                            try:
                                holder[key] = base64.b64encode(bytes.fromhex(holder[key])).decode()
                            except ValueError:
                                raise ValueError(f"{key} {holder[key][:40]!r} is not hex") from None
    return document


def _list(holder: Any, *keys: str) -> list:
    if not isinstance(holder, dict):
        return []
    for key in keys:
        value = holder.get(key)
        if isinstance(value, list):
            return value
    return []


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    if kind == "double_value" and not math.isfinite(value.double_value):
        # JSON (and PostgreSQL's jsonb) has no Infinity or NaN: kept as OTLP/JSON writes them.
        return json_format.MessageToDict(value)["doubleValue"]
    return getattr(value, kind) if kind else None


def _attributes(pairs) -> dict:
    return {pair.key: _value(pair.value) for pair in pairs}


def _span_dict(span, *, resource: dict, scope: str) -> dict:
    """The stored form of a span: ids in hex, times in ns, attributes as plain JSON values
    (text PostgreSQL can hold, at most MAX_SPAN_CHARS of them)."""
    stored = {
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "name": cut_text(span.name, _MAX_NAME_CHARS),
        "kind": span.kind,
        "start": span.start_time_unix_nano,
        "end": span.end_time_unix_nano,
        "attributes": _attributes(span.attributes),
        "status": {"code": span.status.code, "message": cut_text(span.status.message, _MIN_VALUE_CHARS * 10)},
        "events": [
            {"name": cut_text(e.name, _MAX_NAME_CHARS), "attributes": _attributes(e.attributes)} for e in span.events
        ],
        "resource": dict(resource),  # its own copy: the resource's values are cut per span
        "scope": cut_text(scope, _MAX_NAME_CHARS),
    }
    return _bounded(scrub_text(stored))


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(_as_text(value))


def _as_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _bounded(span: dict) -> dict:
    """``span`` with its largest attribute values cut (cut_text's marker; a list or map
    becomes its cut JSON text) until they hold about MAX_SPAN_CHARS characters in all."""
    holders = [span["attributes"], span["resource"], *(event["attributes"] for event in span["events"])]
    sizes = [(holder, key, _size(value)) for holder in holders for key, value in holder.items()]
    if sum(size for _h, _k, size in sizes) <= MAX_SPAN_CHARS:
        return span
    limit = _fair_share(sorted(size for _h, _k, size in sizes), MAX_SPAN_CHARS)
    for holder, key, size in sizes:
        if size > limit:
            value = holder[key]
            holder[key] = cut_text(value if isinstance(value, str) else _as_text(value), limit)
    return span


def _fair_share(sizes: list[int], budget: int) -> int:
    """The largest cut-off at which ``sizes`` (ascending), each cut to it, fit ``budget``
    (the small values are kept whole); never below _MIN_VALUE_CHARS."""
    remaining = budget
    for i, size in enumerate(sizes):
        share = remaining // (len(sizes) - i)
        if size > share:
            return max(share, _MIN_VALUE_CHARS)
        remaining -= size
    return max(remaining, _MIN_VALUE_CHARS)


def span_problem(span: dict) -> str | None:
    """Why a span cannot be stored (OTLP requires 16- and 8-byte non-zero ids), or None."""
    if len(span["trace_id"]) != 32 or not span["trace_id"].strip("0"):
        return "an invalid trace_id"
    if len(span["span_id"]) != 16 or not span["span_id"].strip("0"):
        return "an invalid span_id"
    if span["parent_span_id"] and len(span["parent_span_id"]) != 16:
        return "an invalid parent_span_id"
    return None


def is_agent_span(span: dict) -> bool:
    """Agent work: a span with GenAI, OpenInference, Pydantic AI or reasoningbank attributes."""
    for key in span["attributes"]:
        if key.startswith(("gen_ai.", "openinference.", "reasoningbank.", *_OPENINFERENCE_PREFIXES)):
            return True
        if key in _PYDANTIC_AI_KEYS:
            return True
    return False


def is_root(span: dict) -> bool:
    return not span["parent_span_id"].strip("0")


def to_otlp_json(message) -> dict:
    """An ExportTraceServiceRequest as OTLP/JSON (ids in hex, enums as numbers), as exporters send it."""
    document = json_format.MessageToDict(message, use_integers_for_enums=True)
    for resource_spans in _list(document, "resourceSpans"):
        for scope_spans in _list(resource_spans, "scopeSpans"):
            for span in _list(scope_spans, "spans"):
                for holder in (span, *_list(span, "links")):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in holder:
                            holder[key] = base64.b64decode(holder[key]).hex()
    return document
