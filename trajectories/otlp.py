"""OpenTelemetry traces in: decode an OTLP/HTTP export, keep the spans that
are agent work, and turn the spans of one trace into one trajectory.

* Decoding (:func:`decode_export`): protobuf (``application/x-protobuf``) or
  OTLP/JSON (``application/json``: ids in hex, enums as numbers, camelCase or
  snake_case keys), optionally gzip/deflate-compressed, read with
  ``opentelemetry-proto``'s own messages. A span becomes a plain dict (see
  :func:`_span_dict`) that is stored as it is in ``TraceSpan.span``.
* Agent work (:func:`is_agent_span`): spans that carry GenAI semantic
  conventions (``gen_ai.*``), OpenInference (``openinference.span.kind``,
  ``llm.*``, ``input.value``…), Pydantic AI's own attributes or ours
  (``reasoningbank.*``). HTTP client, database and framework spans carry none
  of these and are dropped.
* Mapping (:func:`trace_to_trajectory`): the spans of a trace in start order
  become native ``{kind, content}`` steps (trajectories.normalize reads them),
  each step keeping the duration of the span it came from (``duration_ms``, on
  the first step of a span). The task is the agent invocation's input, else the
  first user message; the final answer the agent's output, else the model's
  last text reply. ``reasoningbank.outcome/task_id/retrieval_id/group_id`` on
  a span, in Pydantic AI's run ``metadata`` or on the resource carry our fields.
  tests/trajectories/fixtures/record_otlp_instrumentations.py records what the
  real Pydantic AI and OpenInference (OpenAI Agents SDK) instrumentations emit.
"""

from __future__ import annotations

import base64
import json
import uuid
import zlib
from typing import Any

from django.http import HttpResponse
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from reasoningbank_site.errors import TooLarge, Undecodable, UnsupportedMediaType
from trajectories.ingest import MAX_STEP_CONTENT_CHARS

URL_NAME = "otlp_traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# A compressed body may inflate to this many times the body limit (OTLP/JSON compresses ~10×).
MAX_INFLATE_FACTOR = 4
STATUS_ERROR = 2  # Span.Status.STATUS_CODE_ERROR
# gRPC codes for the Status body (clients may log them; the HTTP status is what counts).
_GRPC_CODE = {400: 3, 401: 16, 403: 7, 404: 5, 413: 3, 415: 3, 422: 3, 429: 8, 500: 13, 503: 14}

_OPENINFERENCE_PREFIXES = ("llm.", "tool.", "tool_call.", "input.", "output.", "agent.", "graph.node.")
_PYDANTIC_AI_KEYS = (
    "pydantic_ai.all_messages",
    "final_result",
    "tool_arguments",
    "tool_response",
    "all_messages_events",
)
_AGENT_OPERATIONS = {"invoke_agent", "create_agent"}
_CHAT_OPERATIONS = {"chat", "text_completion", "generate_content"}
_OUTCOMES = {"success", "failure"}


# --- HTTP: which requests are OTLP, and their error bodies --------------------------------


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


# --- decoding ---------------------------------------------------------------------------------


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
    return getattr(value, kind) if kind else None


def _attributes(pairs) -> dict:
    return {pair.key: _value(pair.value) for pair in pairs}


def _span_dict(span, *, resource: dict, scope: str) -> dict:
    """The stored form of a span: ids in hex, times in ns, attributes as plain JSON values."""
    return {
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "name": span.name,
        "kind": span.kind,
        "start": span.start_time_unix_nano,
        "end": span.end_time_unix_nano,
        "attributes": _attributes(span.attributes),
        "status": {"code": span.status.code, "message": span.status.message},
        "events": [{"name": e.name, "attributes": _attributes(e.attributes)} for e in span.events],
        "resource": resource,
        "scope": scope,
    }


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


# --- mapping: the spans of one trace → one trajectory ---------------------------------------


def _json_value(value: Any) -> Any:
    """Attributes that hold JSON text (message lists, arguments) parsed; other values as they are."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _clip(text: str) -> str:
    if len(text) <= MAX_STEP_CONTENT_CHARS:
        return text
    return text[: MAX_STEP_CONTENT_CHARS - 40] + f"\n[… cut: {len(text)} characters in all]"


def _operation(attrs: dict) -> str:
    """``agent``, ``chat``, ``tool`` or ``""`` from GenAI semconv, OpenInference or Pydantic AI."""
    operation = attrs.get("gen_ai.operation.name")
    if operation in _AGENT_OPERATIONS:
        return "agent"
    if operation in _CHAT_OPERATIONS:
        return "chat"
    if operation == "execute_tool":
        return "tool"
    kind = str(attrs.get("openinference.span.kind", "")).upper()
    if kind in ("AGENT", "LLM", "TOOL"):
        return {"AGENT": "agent", "LLM": "chat", "TOOL": "tool"}[kind]
    if "gen_ai.tool.name" in attrs or "tool_arguments" in attrs:
        return "tool"
    if "gen_ai.agent.name" in attrs or "pydantic_ai.all_messages" in attrs or "final_result" in attrs:
        return "agent"
    return ""


def _semconv_messages(value: Any) -> list[dict]:
    """GenAI semconv messages (``[{role, parts: [{type, content | name, arguments, id | response}]}]``)."""
    value = _json_value(value)
    if isinstance(value, dict):
        value = [value]
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _indexed(attrs: dict, prefix: str) -> dict[int, dict]:
    """``prefix.N.rest`` keys grouped by N: ``{N: {rest: value}}``."""
    found: dict[int, dict] = {}
    head = f"{prefix}."
    for key, value in attrs.items():
        if key.startswith(head):
            index, _, rest = key[len(head) :].partition(".")
            if index.isdigit():
                found.setdefault(int(index), {})[rest] = value
    return found


def _openinference_messages(attrs: dict, prefix: str) -> list[dict]:
    """``llm.input_messages.0.message.role`` … flattened attributes back into semconv-shaped messages."""
    messages = _indexed(attrs, prefix)
    result = []
    for _index, fields in sorted(messages.items()):
        # ``message.contents.N.message_content.{type,text}``: typed parts (the Agents SDK's reasoning
        # summaries come as ``reasoning`` parts, with no ``message.content``).
        parts = []
        for _i, item in sorted(_indexed(fields, "message.contents").items()):
            kind = item.get("message_content.type") or "text"
            if kind in ("text", "reasoning") and item.get("message_content.text"):
                parts.append({"type": kind, "content": item["message_content.text"]})
        content = fields.get("message.content")
        if content not in (None, "") and not any(p["type"] == "text" for p in parts):
            parts.append({"type": "text", "content": content})
        content = content or "\n".join(p["content"] for p in parts if p["type"] == "text")
        for _i, call in sorted(_indexed(fields, "message.tool_calls").items()):
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("tool_call.id"),
                    "name": call.get("tool_call.function.name", ""),
                    "arguments": call.get("tool_call.function.arguments"),
                }
            )
        role = fields.get("message.role", "")
        if role == "tool":
            parts = [
                {
                    "type": "tool_call_response",
                    "id": fields.get("message.tool_call_id"),
                    "response": content,
                    "name": fields.get("message.name"),
                }
            ]
        result.append({"role": role, "parts": parts})
    return result


def _pydantic_ai_messages(value: Any) -> list[dict]:
    """Pydantic AI's ``pydantic_ai.all_messages`` is already semconv-shaped."""
    return _semconv_messages(value)


def _input_messages(attrs: dict) -> list[dict]:
    return (
        _semconv_messages(attrs.get("gen_ai.input.messages"))
        or _openinference_messages(attrs, "llm.input_messages")
        or _pydantic_ai_messages(attrs.get("pydantic_ai.all_messages"))
    )


def _output_messages(attrs: dict) -> list[dict]:
    return _semconv_messages(attrs.get("gen_ai.output.messages")) or _openinference_messages(
        attrs, "llm.output_messages"
    )


def _parts_text(message: dict, kinds=("text",)) -> str:
    texts = []
    for part in message.get("parts") or []:
        if isinstance(part, dict) and part.get("type") in kinds:
            texts.append(_text(part.get("content")))
    if not texts and isinstance(message.get("content"), str):  # older flat shape
        texts.append(message["content"])
    return "\n".join(t for t in texts if t)


def _first_user_text(messages: list[dict]) -> str:
    for message in messages:
        if message.get("role") == "user":
            text = _parts_text(message)
            if text:
                return text
    return ""


def _last_assistant_text(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") in ("assistant", "model"):
            return _parts_text(message)
    return ""


def _system_text(attrs: dict, messages: list[dict]) -> str:
    instructions = _json_value(attrs.get("gen_ai.system_instructions"))
    if isinstance(instructions, list):
        return "\n".join(_text(p.get("content")) if isinstance(p, dict) else _text(p) for p in instructions)
    if isinstance(instructions, str):
        return instructions
    return "\n".join(_parts_text(m) for m in messages if m.get("role") in ("system", "developer"))


def _duration_ms(span: dict) -> int | None:
    if span["start"] and span["end"] and span["end"] >= span["start"]:
        return round((span["end"] - span["start"]) / 1_000_000)
    return None


def _error_text(span: dict) -> str:
    """The span's error: its status message, else its exception event, else ''."""
    if span["status"]["code"] != STATUS_ERROR:
        return ""
    message = span["status"]["message"]
    for event in span["events"]:
        if event["name"] == "exception":
            exc = event["attributes"]
            found = ": ".join(x for x in (exc.get("exception.type"), exc.get("exception.message")) if x)
            message = message or found
    return message or "The span ended with an error status."


def _run_metadata(span: dict) -> dict:
    """Pydantic AI's run ``metadata`` (``agent.run(..., metadata={...})``), a JSON attribute of its agent span."""
    value = _json_value(span["attributes"].get("metadata"))
    return value if isinstance(value, dict) else {}


def _field(spans: list[dict], key: str) -> str:
    """``reasoningbank.<key>`` from the first span that has it (as an attribute, else in Pydantic AI's
    run metadata), else from the resource."""
    for where in (lambda s: s["attributes"], _run_metadata, lambda s: s["resource"]):
        for span in spans:
            value = where(span).get(f"reasoningbank.{key}")
            if value not in (None, ""):
                return str(value).strip()
    return ""


class _Steps:
    """Steps in span order; a span's duration rides on the first step it produced."""

    def __init__(self):
        self.steps: list[dict] = []
        self.called: dict[str, str] = {}  # tool call id → tool name, for calls shown as tool_call steps
        self.answered: set[str] = set()  # tool call ids whose result is shown
        self.seen_user: set[str] = set()
        self.system_shown = False
        self._pending_duration: int | None = None

    def begin(self, span: dict) -> None:
        self._pending_duration = _duration_ms(span)

    def add(self, kind: str, content: str, *, timed: bool = True, **optional) -> None:
        """``timed=False`` for steps echoed from a model's input (system, user, earlier tool results):
        the span's time was spent producing its outputs."""
        step = {"kind": kind, "content": _clip(content)}
        step.update({k: v for k, v in optional.items() if v not in (None, "")})
        if timed and self._pending_duration is not None:
            step["duration_ms"] = self._pending_duration
            self._pending_duration = None
        self.steps.append(step)


def _chat_steps(out: _Steps, span: dict) -> None:
    attrs = span["attributes"]
    inputs = _input_messages(attrs)
    system = _system_text(attrs, inputs)
    if system and not out.system_shown:
        out.add("system", system, timed=False)
        out.system_shown = True
    for message in inputs:
        role = message.get("role")
        if role == "user":
            text = _parts_text(message)
            if text and text not in out.seen_user:
                out.seen_user.add(text)
                out.add("user", text, timed=False)
        for part in message.get("parts") or []:
            # A tool result the model was shown but no tool span reported (LLM-only instrumentation).
            if isinstance(part, dict) and part.get("type") == "tool_call_response":
                call_id = _text(part.get("id"))
                if call_id and call_id not in out.answered:
                    out.answered.add(call_id)
                    result = part.get("response", part.get("result"))
                    name = part.get("name") or out.called.get(call_id)
                    out.add("tool_result", _text(result), timed=False, name=name, call_id=call_id)
    outputs = _output_messages(attrs)
    # Text beside tool calls is a thought, not an answer; OpenInference splits one model response
    # into several output messages (reasoning, text, tool calls), so this is decided per span.
    calls_made = any(
        isinstance(p, dict) and p.get("type") == "tool_call" for m in outputs for p in m.get("parts") or []
    )
    for message in outputs:
        parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
        calls = [p for p in parts if p.get("type") == "tool_call"]
        reasoning = _parts_text(message, kinds=("reasoning", "thinking"))
        if reasoning:
            out.add("thought", reasoning)
        text = _parts_text(message)
        if text:
            out.add("thought" if calls_made else "action", text)
        for call in calls:
            call_id = _text(call.get("id"))
            name = _text(call.get("name")) or "tool"
            if call_id:
                out.called[call_id] = name
            out.add(
                "tool_call",
                "",
                name=name,
                arguments=_text(_json_value(call.get("arguments")) if call.get("arguments") is not None else {}),
                call_id=call_id,
            )
    error = _error_text(span)
    if error:
        out.add("observation", f"The model call failed: {error}", is_error=True)


def _tool_steps(out: _Steps, span: dict) -> None:
    attrs = span["attributes"]
    name = _text(attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or attrs.get("tool_name")) or span["name"]
    call_id = _text(attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id") or attrs.get("tool_call_id"))
    arguments = next(
        (
            attrs[key]
            for key in ("gen_ai.tool.call.arguments", "tool_arguments", "input.value")
            if attrs.get(key) is not None
        ),
        None,
    )
    result = next(
        (attrs[key] for key in ("gen_ai.tool.call.result", "tool_response", "output.value") if key in attrs), None
    )
    if not call_id:
        # OpenInference tool spans carry no call id: this is the model's oldest unanswered call of this tool.
        call_id = next((c for c, n in out.called.items() if n == name and c not in out.answered), "")
    if not call_id or call_id not in out.called:
        # The model's request was not recorded (content capture off, or no chat span): show the call here.
        out.add(
            "tool_call", "", name=name, arguments=_text(_json_value(arguments) if arguments else {}), call_id=call_id
        )
        if call_id:
            out.called[call_id] = name
    error = _error_text(span)
    if call_id:
        out.answered.add(call_id)
    if error:
        text = _text(result)
        content = f"{text}\nError: {error}" if text and text not in error else error
        out.add("tool_result", content, name=name, call_id=call_id, is_error=True)
    else:
        out.add("tool_result", _text(result), name=name, call_id=call_id)


def _agent_input(attrs: dict) -> str:
    messages = _semconv_messages(attrs.get("gen_ai.input.messages")) or _pydantic_ai_messages(
        attrs.get("pydantic_ai.all_messages")
    )
    text = _first_user_text(messages)
    if text:
        return text
    value = _json_value(attrs.get("input.value"))
    if isinstance(value, list):  # OpenInference agents record their input items
        for item in value:
            if isinstance(item, dict) and item.get("role") == "user":
                content = item.get("content")
                return content if isinstance(content, str) else _text(content)
    return _text(value)


def _agent_output(attrs: dict) -> str:
    text = _last_assistant_text(_semconv_messages(attrs.get("gen_ai.output.messages")))
    if text:
        return text
    for key in ("final_result", "output.value"):
        if attrs.get(key) not in (None, ""):
            return _text(attrs[key])
    return ""


def trace_to_trajectory(spans: list[dict], *, trace_id: str, closed_by: str) -> dict:
    """One trajectory (a ``TrajectoryIn`` dict with native ``{kind, content}``
    steps) from the stored spans of one trace, read in start order."""
    spans = sorted(spans, key=lambda s: (s["start"], s["end"]))
    out = _Steps()
    task = final = ""
    agents = []
    unnamed_agents = []
    usage = {"input_tokens": 0, "output_tokens": 0}
    models = []
    for span in spans:
        attrs = span["attributes"]
        operation = _operation(attrs)
        usage["input_tokens"] += int(attrs.get("gen_ai.usage.input_tokens") or attrs.get("llm.token_count.prompt") or 0)
        usage["output_tokens"] += int(
            attrs.get("gen_ai.usage.output_tokens") or attrs.get("llm.token_count.completion") or 0
        )
        model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or attrs.get("llm.model_name")
        if model and model not in models:
            models.append(str(model))
        out.begin(span)
        if operation == "agent":
            name = attrs.get("gen_ai.agent.name") or attrs.get("agent_name") or attrs.get("agent.name")
            agents.append(_text(name))
            if attrs.get("openinference.span.kind"):
                # Named by its span only: OpenInference's "Agent workflow" root is no agent's name.
                unnamed_agents.append(span["name"])
            task = task or _agent_input(attrs)
            final = final or _agent_output(attrs)  # the outermost agent starts first
            error = _error_text(span)
            if error:
                out.add("observation", f"The agent run failed: {error}", is_error=True)
        elif operation == "chat":
            _chat_steps(out, span)
        elif operation == "tool":
            _tool_steps(out, span)
        else:
            error = _error_text(span)
            if error:
                out.add("observation", f"{span['name']} failed: {error}", is_error=True)
    if not task:
        task = next((step["content"] for step in out.steps if step["kind"] == "user"), "")
    if not final:
        actions = [s for s in out.steps if s["kind"] == "action"]
        last_kind = out.steps[-1]["kind"] if out.steps else ""
        final = actions[-1]["content"] if actions and last_kind == "action" else ""
    root = spans[0] if spans else None
    title = next((a for a in agents if a), "") or next(iter(unnamed_agents), "") or (root["name"] if root else "")
    if not out.steps:
        # Content capture was off: the run is still evidence of what happened, span by span.
        for span in spans:
            out.begin(span)
            out.add("action", f"[{span['name']}: no content recorded]")
    warnings = []
    outcome = _field(spans, "outcome").lower()
    if outcome and outcome not in _OUTCOMES:
        warnings.append(f"reasoningbank.outcome {outcome!r} is not success/failure; ignored.")
        outcome = ""
    retrieval_id = _field(spans, "retrieval_id")
    if retrieval_id:
        try:
            retrieval_id = str(uuid.UUID(retrieval_id))
        except ValueError:
            warnings.append(f"reasoningbank.retrieval_id {retrieval_id[:60]!r} is not a UUID; ignored.")
            retrieval_id = ""
    resource = root["resource"] if root else {}
    starts = [s["start"] for s in spans if s["start"]]
    ends = [s["end"] for s in spans if s["end"]]
    metadata = {
        "otlp": {
            "trace_id": trace_id,
            "service": _text(resource.get("service.name")),
            "spans": len(spans),
            "duration_ms": round((max(ends) - min(starts)) / 1_000_000) if starts and ends else None,
            "models": models,
            "usage": usage,
            "closed_by": closed_by,
            **({"warnings": warnings} if warnings else {}),
        }
    }
    return {
        "task": (task or title or f"OpenTelemetry trace {trace_id}")[:20_000],
        "steps": out.steps,
        "final_answer": final[:200_000],
        "outcome": outcome or None,
        "external_id": trace_id,
        "retrieval_id": retrieval_id or None,
        "task_id": _field(spans, "task_id")[:200],
        "group_id": _field(spans, "group_id")[:200],
        "agent": (title or _text(resource.get("service.name")))[:200],
        "metadata": metadata,
    }


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
