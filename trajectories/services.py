"""Writes for OpenTelemetry traces (OTLP): buffered agent spans become one
trajectory per trace through trajectories.recording.ingest. The other writes
for trajectories live in trajectories.recording."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

import pydantic
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import ApiToken, Bank
from reasoningbank_site.errors import DomainError
from reasoningbank_site.text import counted
from trajectories import otlp
from trajectories.models import InputFormat, TraceSpan, Trajectory
from trajectories.recording.batch import validation_error_dict as _validation_error_dict
from trajectories.recording.ingest import trajectory_ingest

log = logging.getLogger(__name__)


# --- OpenTelemetry traces (OTLP) ------------------------------------------------------------


@dataclass
class OtlpExportResult:
    accepted: int = 0  # agent spans stored (or already stored: re-export)
    ignored: int = 0  # spans that are not agent work
    rejected: int = 0
    trajectories: list[Trajectory] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _lock_trace(*, bank: Bank, trace_id: str) -> None:
    """Serialize work on one trace of one bank until the transaction ends, so a
    root span never closes a trace while another export of its children is in flight."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"otlp:{bank.pk}:{trace_id}"])


@transaction.atomic
def otlp_spans_ingest(*, bank: Bank, token: ApiToken | None, spans: list[dict]) -> OtlpExportResult:
    """Buffer the agent spans of one OTLP export (decoded by
    trajectories.otlp.decode_export) and close every trace whose root span is
    in it: the trace becomes one trajectory (external_id = trace id).

    Promises: spans that are not agent work are counted as ignored and never
    stored; a re-exported span is stored once; spans of a trace already
    recorded are not buffered again; a span with invalid ids, or beyond
    settings.RB_MAX_STEPS spans in its trace, is rejected (counted, with the
    reason in ``warnings``). Never merges traces of different banks."""
    result = OtlpExportResult()
    by_trace: dict[str, list[dict]] = {}
    roots: set[str] = set()
    problems: dict[str, int] = {}
    for span in spans:
        problem = otlp.span_problem(span)
        if problem:
            result.rejected += 1
            problems[problem] = problems.get(problem, 0) + 1
            continue
        if otlp.is_root(span):
            roots.add(span["trace_id"])
        if not otlp.is_agent_span(span):
            result.ignored += 1
            continue
        by_trace.setdefault(span["trace_id"], []).append(span)
    result.warnings += [f"{counted(n, 'span')} rejected: {problem}." for problem, n in problems.items()]

    trace_ids = sorted(set(by_trace) | roots)
    recorded = set(
        Trajectory.objects.filter(bank=bank, external_id__in=trace_ids).values_list("external_id", flat=True)
    )
    late = 0
    for trace_id in trace_ids:  # sorted: two exports lock shared traces in the same order
        _lock_trace(bank=bank, trace_id=trace_id)
        if trace_id in recorded:
            late += len(by_trace.get(trace_id, []))
            result.accepted += len(by_trace.get(trace_id, []))
            continue
        incoming = by_trace.get(trace_id, [])
        room = settings.RB_MAX_STEPS - TraceSpan.objects.filter(bank=bank, trace_id=trace_id).count()
        if len(incoming) > max(room, 0):
            over = len(incoming) - max(room, 0)
            result.rejected += over
            result.warnings.append(
                f"{counted(over, 'span')} of trace {trace_id} rejected: a trace holds at most {settings.RB_MAX_STEPS} "
                "spans (RB_MAX_STEPS)."
            )
            incoming = incoming[: max(room, 0)]
        TraceSpan.objects.bulk_create(
            [
                TraceSpan(
                    bank=bank,
                    token=token,
                    trace_id=trace_id,
                    span_id=span["span_id"],
                    parent_span_id=span["parent_span_id"],
                    start_ns=span["start"],
                    span=span,
                )
                for span in incoming
            ],
            ignore_conflicts=True,
        )
        result.accepted += len(incoming)
        if trace_id in roots:
            trajectory, warning = otlp_trace_close(bank=bank, trace_id=trace_id, closed_by="root_span")
            if trajectory is not None:
                result.trajectories.append(trajectory)
            if warning:
                result.warnings.append(warning)
    if late:
        result.warnings.append(
            f"{counted(late, 'span')} {'belongs' if late == 1 else 'belong'} to traces already recorded as trajectories; not stored again."
        )
    return result


@transaction.atomic
def otlp_trace_close(*, bank: Bank, trace_id: str, closed_by: str, idle_since=None) -> tuple[Trajectory | None, str]:
    """Turn the buffered spans of one trace into one trajectory through
    trajectory_ingest (external_id = trace id, input_format ``otlp``) and drop
    the buffer. Returns ``(trajectory or None, warning)``: None when nothing
    was buffered, or when the trace cannot become a trajectory (the warning
    says why; the buffer is dropped all the same, so it is not retried forever).
    With ``idle_since``, a trace that received a span after that moment is left open."""
    _lock_trace(bank=bank, trace_id=trace_id)
    rows = list(TraceSpan.objects.filter(bank=bank, trace_id=trace_id).order_by("start_ns", "pk"))
    if not rows or (idle_since is not None and max(row.received_at for row in rows) > idle_since):
        return None, ""
    data = otlp.trace_to_trajectory([row.span for row in rows], trace_id=trace_id, closed_by=closed_by)
    warning = ""
    trajectory = None
    try:
        with transaction.atomic():
            trajectory, _created = trajectory_ingest(
                bank=bank, token=rows[-1].token, data=data, input_format=InputFormat.OTLP
            )
    except pydantic.ValidationError as exc:
        warning = f"Trace {trace_id} could not become a trajectory: {_validation_error_dict(exc)['detail']}"
    except DomainError as exc:
        warning = f"Trace {trace_id} could not become a trajectory: {exc.message}"
    if warning:
        log.warning("%s (bank %s)", warning, bank.pk)
    TraceSpan.objects.filter(bank=bank, trace_id=trace_id).delete()
    return trajectory, warning


def otlp_traces_close_idle(*, idle_seconds: int | None = None) -> list[tuple[int, str]]:
    """Close every buffered trace that received no span for ``idle_seconds``
    (settings.RB_OTLP_IDLE_SECONDS): its root span never came (a crashed
    agent, or a root that is not exported). Returns the (bank id, trace id)
    pairs closed; each close is its own transaction."""
    idle = settings.RB_OTLP_IDLE_SECONDS if idle_seconds is None else idle_seconds
    cutoff = timezone.now() - timedelta(seconds=idle)
    stale = (
        TraceSpan.objects.values("bank_id", "trace_id")
        .annotate(last=Max("received_at"))
        .filter(last__lte=cutoff)
        .order_by("last")
    )
    closed = []
    for row in stale:
        bank = Bank.objects.get(pk=row["bank_id"])
        trajectory, _warning = otlp_trace_close(
            bank=bank, trace_id=row["trace_id"], closed_by="idle_timeout", idle_since=cutoff
        )
        if trajectory is not None:
            closed.append((bank.pk, row["trace_id"]))
    return closed
