"""Closing buffered traces (services): a trace becomes one trajectory when a
worker runs the close its root span's export enqueued, or, when the root
never came, when the sweeper finds it idle for RB_OTLP_IDLE_SECONDS.

Each trace closes in its own transaction, reading its spans in chunks (a
trace may hold RB_MAX_STEPS spans of up to MAX_SPAN_CHARS each). A trace that
cannot be closed (its rows cannot be mapped, or storing the trajectory fails
on its data) is dropped, logged and reported; it never stops the close of
any other trace, of this bank or another. A database outage is not such a
failure: it propagates, and the rows wait for the next try."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

import pydantic
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import ApiToken, Bank
from reasoningbank_site.errors import DomainError
from reasoningbank_site.text import counted
from trajectories.ingest.record import trajectory_ingest
from trajectories.models import InputFormat, Trajectory
from trajectories.otlp.buffer import lock_trace
from trajectories.otlp.mapping import trajectory_from_spans
from trajectories.otlp.models import TraceSpan

log = logging.getLogger(__name__)

# Spans read from the database at a time while a trace is mapped.
CHUNK_SPANS = 20


@dataclass
class OtlpCloseReport:
    closed: list[tuple[int, str]] = field(default_factory=list)  # (bank id, trace id) now a trajectory
    failed: list[tuple[int, str, str]] = field(default_factory=list)  # (bank id, trace id, why), dropped


def _describe(exc: pydantic.ValidationError) -> str:
    errors = exc.errors(include_url=False)[:5]
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors) or "invalid trajectory"


@transaction.atomic
def otlp_trace_close(*, bank: Bank, trace_id: str, closed_by: str, idle_since=None) -> tuple[Trajectory | None, str]:
    """Turn the buffered spans of one trace into one trajectory through
    trajectory_ingest (external_id = trace id, input_format ``otlp``) and drop
    the buffer. Returns ``(trajectory or None, warning)``: None when nothing
    was buffered, or when the trace cannot become a trajectory (the warning
    says why; the buffer is dropped all the same, so it is not retried forever).
    With ``idle_since``, a trace that received a span after that moment is left open.
    Raises whatever mapping or storing raised otherwise (see otlp_traces_close)."""
    lock_trace(bank_id=bank.pk, trace_id=trace_id)
    rows = TraceSpan.objects.filter(bank=bank, trace_id=trace_id)
    last = rows.aggregate(last=Max("received_at"))["last"]
    if last is None or (idle_since is not None and last > idle_since):
        return None, ""
    token_id = rows.order_by("-start_ns", "-pk").values_list("token_id", flat=True).first()
    spans = rows.order_by("start_ns", "span__end", "pk").values_list("span", flat=True).iterator(CHUNK_SPANS)
    data = trajectory_from_spans(spans, trace_id=trace_id, closed_by=closed_by)
    warning = ""
    trajectory = None
    try:
        with transaction.atomic():
            token = ApiToken.objects.filter(pk=token_id).first() if token_id else None
            trajectory, _created = trajectory_ingest(bank=bank, token=token, data=data, input_format=InputFormat.OTLP)
    except pydantic.ValidationError as exc:
        warning = f"Trace {trace_id} could not become a trajectory: {_describe(exc)}"
    except DomainError as exc:
        warning = f"Trace {trace_id} could not become a trajectory: {exc.message}"
    if warning:
        log.warning("%s (bank %s)", warning, bank.pk)
    rows.delete()
    return trajectory, warning


@transaction.atomic
def _trace_drop(*, bank_id: int, trace_id: str) -> int:
    lock_trace(bank_id=bank_id, trace_id=trace_id)
    deleted, _ = TraceSpan.objects.filter(bank_id=bank_id, trace_id=trace_id).delete()
    return deleted


def _close_one(report: OtlpCloseReport, *, bank: Bank, trace_id: str, closed_by: str, idle_since=None) -> None:
    """Close one trace into ``report``; a failure drops that trace alone (see the module docstring)."""
    try:
        trajectory, warning = otlp_trace_close(bank=bank, trace_id=trace_id, closed_by=closed_by, idle_since=idle_since)
    except (OperationalError, InterfaceError):
        raise  # an outage: the rows stay for the next try
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"[:500]
        dropped = _trace_drop(bank_id=bank.pk, trace_id=trace_id)
        log.exception(
            "OTLP trace %s of bank %s could not be closed; its %s dropped: %s",
            trace_id,
            bank.pk,
            counted(dropped, "buffered span was", "buffered spans were"),
            why,
        )
        report.failed.append((bank.pk, trace_id, why))
        return
    if trajectory is not None:
        report.closed.append((bank.pk, trace_id))
    elif warning:
        report.failed.append((bank.pk, trace_id, warning))


def otlp_traces_close(*, bank_id: int, trace_ids: list[str]) -> OtlpCloseReport:
    """Close the traces whose root span an export carried (the worker's half
    of otlp_spans_ingest), each on its own. A trace closed since (a
    redelivered message, the sweeper) has nothing buffered and is skipped."""
    report = OtlpCloseReport()
    bank = Bank.objects.filter(pk=bank_id).first()
    if bank is None:  # deleted since: its buffered spans went with it
        return report
    for trace_id in trace_ids:
        _close_one(report, bank=bank, trace_id=trace_id, closed_by="root_span")
    return report


def otlp_traces_close_idle(*, idle_seconds: int | None = None) -> OtlpCloseReport:
    """Close every buffered trace that received no span for ``idle_seconds``
    (settings.RB_OTLP_IDLE_SECONDS): its root span never came (a crashed
    agent, a root that is not exported, or a close message that was lost).
    Each close is its own transaction; a trace that fails is dropped and
    reported, and the others still close."""
    idle = settings.RB_OTLP_IDLE_SECONDS if idle_seconds is None else idle_seconds
    cutoff = timezone.now() - timedelta(seconds=idle)
    stale = (
        TraceSpan.objects.values("bank_id", "trace_id")
        .annotate(last=Max("received_at"))
        .filter(last__lte=cutoff)
        .order_by("last")
    )
    report = OtlpCloseReport()
    banks: dict[int, Bank | None] = {}
    for row in stale:
        if row["bank_id"] not in banks:
            banks[row["bank_id"]] = Bank.objects.filter(pk=row["bank_id"]).first()
        bank = banks[row["bank_id"]]
        if bank is not None:
            _close_one(report, bank=bank, trace_id=row["trace_id"], closed_by="idle_timeout", idle_since=cutoff)
    return report
