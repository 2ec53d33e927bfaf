"""The spans of one trace → one trajectory.

The spans in start order become native ``{kind, content}`` steps
(trajectories.ingest reads them), each step keeping the duration of the
span it came from (``duration_ms``, on the first step of a span). The task is
the agent invocation's input, else the first user message; the final answer
the agent's output, else the model's last text reply.
``reasoningbank.outcome/task_id/retrieval_id/group_id`` on a span, in
Pydantic AI's run ``metadata`` or on the resource carry our fields.

The spans are read once, in order (:func:`trajectory_from_spans` takes an
iterator over the stored rows), so a trace is mapped without holding all its
spans. An attribute of the wrong type (an operation name that is a list, a
token count that is not a number) is ignored with a warning in the
trajectory's ``metadata.otlp.warnings``; mapping never raises on values."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

from trajectories.otlp import messages as m
from trajectories.otlp.usage import USAGE_KEYS, span_tokens, usage_field

STATUS_ERROR = 2  # Span.Status.STATUS_CODE_ERROR
_AGENT_OPERATIONS = {"invoke_agent", "create_agent"}
_CHAT_OPERATIONS = {"chat", "text_completion", "generate_content"}
_OUTCOMES = {"success", "failure"}
_FIELDS = ("outcome", "task_id", "retrieval_id", "group_id")
_MAX_WARNINGS = 20


class _Steps:
    """Steps in span order; a span's duration rides on the first step it produced."""

    def __init__(self):
        self.steps: list[dict] = []
        self.called: dict[str, str] = {}  # tool call id → tool name, for calls shown as tool_call steps
        self.answered: set[str] = set()  # tool call ids whose result is shown
        self.seen_user: set[str] = set()
        self.system_shown = False
        self.warnings: list[str] = []
        self.pending_duration: int | None = None

    def begin(self, span: dict) -> None:
        self.pending_duration = _duration_ms(span)

    def warn(self, warning: str) -> None:
        if warning not in self.warnings and len(self.warnings) < _MAX_WARNINGS:
            self.warnings.append(warning)

    def add(self, kind: str, content: str, *, timed: bool = True, **optional) -> None:
        """``timed=False`` for steps echoed from a model's input (system, user, earlier tool results):
        the span's time was spent producing its outputs."""
        step = {"kind": kind, "content": m.clip(content)}
        for key, value in optional.items():
            if value in (None, ""):
                continue
            step[key] = value if isinstance(value, bool) else m.clip(m.text(value))
            if key == "name":  # ingest refuses a multi-line tool name; a span's is folded onto one line instead
                step[key] = _ONE_LINE.sub(" ", step[key]).strip() or "tool"
        if timed and self.pending_duration is not None:
            step["duration_ms"] = self.pending_duration
            self.pending_duration = None
        self.steps.append(step)


_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _name(attrs: dict, key: str, out: _Steps) -> str | None:
    """A string-valued attribute; another type is ignored with a warning."""
    value = attrs.get(key)
    if value is None or isinstance(value, str):
        return value
    out.warn(f"{key} is not a string ({m.text(value)[:60]}); ignored.")
    return None


def _operation(attrs: dict, out: _Steps) -> str:
    """``agent``, ``chat``, ``tool`` or ``""`` from GenAI semconv, OpenInference or Pydantic AI."""
    operation = _name(attrs, "gen_ai.operation.name", out)
    if operation in _AGENT_OPERATIONS:
        return "agent"
    if operation in _CHAT_OPERATIONS:
        return "chat"
    if operation == "execute_tool":
        return "tool"
    kind = m.text(attrs.get("openinference.span.kind", "")).upper()
    if kind in ("AGENT", "LLM", "TOOL"):
        return {"AGENT": "agent", "LLM": "chat", "TOOL": "tool"}[kind]
    if "gen_ai.tool.name" in attrs or "tool_arguments" in attrs:
        return "tool"
    if "gen_ai.agent.name" in attrs or "pydantic_ai.all_messages" in attrs or "final_result" in attrs:
        return "agent"
    return ""


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
            found = ": ".join(m.text(exc.get(k)) for k in ("exception.type", "exception.message") if exc.get(k))
            message = message or found
    return message or "The span ended with an error status."


def _run_metadata(span: dict) -> dict:
    """Pydantic AI's run ``metadata`` (``agent.run(..., metadata={...})``), a JSON attribute of its agent span."""
    value = m.json_value(span["attributes"].get("metadata"))
    return value if isinstance(value, dict) else {}


def _chat_steps(out: _Steps, span: dict) -> None:
    attrs = span["attributes"]
    inputs = m.input_messages(attrs)
    system = m.system_text(attrs, inputs)
    if system and not out.system_shown:
        out.add("system", system, timed=False)
        out.system_shown = True
    for message in inputs:
        if message.get("role") == "user":
            user = m.parts_text(message)
            if user and user not in out.seen_user:
                out.seen_user.add(user)
                out.add("user", user, timed=False)
        for part in m.parts(message):
            # A tool result the model was shown but no tool span reported (LLM-only instrumentation).
            if part.get("type") == "tool_call_response":
                call_id = m.text(part.get("id"))
                if call_id and call_id not in out.answered:
                    out.answered.add(call_id)
                    result = part.get("response", part.get("result"))
                    name = part.get("name") or out.called.get(call_id)
                    out.add("tool_result", m.text(result), timed=False, name=name, call_id=call_id)
    outputs = m.output_messages(attrs)
    # Text beside tool calls is a thought, not an answer; OpenInference splits one model response
    # into several output messages (reasoning, text, tool calls), so this is decided per span.
    calls_made = any(p.get("type") == "tool_call" for message in outputs for p in m.parts(message))
    for message in outputs:
        calls = [p for p in m.parts(message) if p.get("type") == "tool_call"]
        reasoning = m.parts_text(message, kinds=("reasoning", "thinking"))
        if reasoning:
            out.add("thought", reasoning)
        said = m.parts_text(message)
        if said:
            out.add("thought" if calls_made else "action", said)
        for call in calls:
            call_id = m.text(call.get("id"))
            name = m.text(call.get("name")) or "tool"
            if call_id:
                out.called[call_id] = name
            out.add(
                "tool_call",
                "",
                name=name,
                arguments=m.text(m.json_value(call.get("arguments")) if call.get("arguments") is not None else {}),
                call_id=call_id,
            )
    error = _error_text(span)
    if error:
        out.add("observation", f"The model call failed: {error}", is_error=True)


def _tool_steps(out: _Steps, span: dict) -> None:
    attrs = span["attributes"]
    name = m.text(attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or attrs.get("tool_name")) or span["name"]
    call_id = m.text(attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id") or attrs.get("tool_call_id"))
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
            "tool_call", "", name=name, arguments=m.text(m.json_value(arguments) if arguments else {}), call_id=call_id
        )
        if call_id:
            out.called[call_id] = name
    error = _error_text(span)
    if call_id:
        out.answered.add(call_id)
    if error:
        shown = m.text(result)
        content = f"{shown}\nError: {error}" if shown and shown not in error else error
        out.add("tool_result", content, name=name, call_id=call_id, is_error=True)
    else:
        out.add("tool_result", m.text(result), name=name, call_id=call_id)


def _agent_input(attrs: dict) -> str:
    found = m.semconv_messages(attrs.get("gen_ai.input.messages")) or m.pydantic_ai_messages(
        attrs.get("pydantic_ai.all_messages")
    )
    first = m.first_user_text(found)
    if first:
        return first
    value = m.json_value(attrs.get("input.value"))
    if isinstance(value, list):  # OpenInference agents record their input items
        for item in value:
            if isinstance(item, dict) and item.get("role") == "user":
                content = item.get("content")
                return content if isinstance(content, str) else m.text(content)
    return m.text(value)


def _agent_output(attrs: dict) -> str:
    last = m.last_assistant_text(m.semconv_messages(attrs.get("gen_ai.output.messages")))
    if last:
        return last
    for key in ("final_result", "output.value"):
        if attrs.get(key) not in (None, ""):
            return m.text(attrs[key])
    return ""


def start_order(span: dict) -> tuple[int, int]:
    return span["start"], span["end"]


def trace_to_trajectory(spans: list[dict], *, trace_id: str, closed_by: str) -> dict:
    """One trajectory (a ``TrajectoryIn`` dict with native ``{kind, content}``
    steps) from the stored spans of one trace, in any order."""
    return trajectory_from_spans(sorted(spans, key=start_order), trace_id=trace_id, closed_by=closed_by)


def trajectory_from_spans(spans: Iterable[dict], *, trace_id: str, closed_by: str) -> dict:
    """:func:`trace_to_trajectory` of spans given in start order, each read once."""
    out = _Steps()
    task = final = ""
    agents: list[str] = []
    unnamed_agents: list[str] = []
    usage = {"input_tokens": 0, "output_tokens": 0}
    usage_reported = False
    models: list[str] = []
    # Our fields: the first span's attribute, else its run metadata's, else its resource's (see _field).
    fields: list[dict[str, str]] = [{}, {}, {}]
    root: dict | None = None
    count = 0
    starts: list[int] = []
    ends: list[int] = []
    shown: list[tuple[str, int | None]] = []  # (name, duration) of each span, for a trace without content
    for span in spans:
        count += 1
        if root is None:
            root = {"name": span["name"], "resource": span["resource"]}
        attrs = span["attributes"]
        for tier, holder in enumerate((attrs, _run_metadata(span), span["resource"])):
            for key in _FIELDS:
                value = holder.get(f"reasoningbank.{key}")
                if key not in fields[tier] and value not in (None, ""):
                    fields[tier][key] = m.text(value).strip()
        starts += [span["start"]] if span["start"] else []
        ends += [span["end"]] if span["end"] else []
        shown.append((span["name"], _duration_ms(span)))
        operation = _operation(attrs, out)
        for name, keys in USAGE_KEYS.items():
            tokens = span_tokens(attrs, keys, out)
            if tokens is not None:
                usage[name] += tokens
                usage_reported = True
        model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or attrs.get("llm.model_name")
        if model and m.text(model) not in models:
            models.append(m.text(model))
        out.begin(span)
        if operation == "agent":
            name = attrs.get("gen_ai.agent.name") or attrs.get("agent_name") or attrs.get("agent.name")
            agents.append(m.text(name))
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
    title = next((a for a in agents if a), "") or next(iter(unnamed_agents), "") or (root["name"] if root else "")
    if not out.steps:
        # Content capture was off: the run is still evidence of what happened, span by span.
        for name, duration in shown:
            out.pending_duration = duration
            out.add("action", f"[{name}: no content recorded]")

    def field(key: str) -> str:
        return next((tier[key] for tier in fields if key in tier), "")

    usage_field_value = usage_field(usage, usage_reported, out)
    warnings = list(out.warnings)
    outcome = field("outcome").lower()
    if outcome and outcome not in _OUTCOMES:
        warnings.append(f"reasoningbank.outcome {outcome!r} is not success/failure; ignored.")
        outcome = ""
    retrieval_id = field("retrieval_id")
    if retrieval_id:
        try:
            retrieval_id = str(uuid.UUID(retrieval_id))
        except ValueError:
            warnings.append(f"reasoningbank.retrieval_id {retrieval_id[:60]!r} is not a UUID; ignored.")
            retrieval_id = ""
    resource: dict[str, Any] = root["resource"] if root else {}
    metadata = {
        "otlp": {
            "trace_id": trace_id,
            "service": m.text(resource.get("service.name")),
            "spans": count,
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
        "task_id": field("task_id")[:200],
        "group_id": field("group_id")[:200],
        "agent": (title or m.text(resource.get("service.name")))[:200],
        "metadata": metadata,
        "usage": usage_field_value,
    }
