"""Buffering the spans of an OTLP export (services): the agent spans of each
trace wait in ``TraceSpan`` rows until the trace closes. An export whose root
span completes a trace stores the spans and enqueues the close
(trajectories.otlp.close) after commit: the trajectory is built by a worker,
never inside the export request."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction

from accounts.models import ApiToken, Bank
from reasoningbank_site.celery import enqueue_on_commit
from reasoningbank_site.text import counted
from trajectories.ingest.quotas import ingest_quota_left
from trajectories.models import Trajectory
from trajectories.otlp.decode import is_agent_span, is_root, span_problem
from trajectories.otlp.models import TraceSpan

# Registered in trajectories.tasks; enqueued by name (this module never imports tasks).
CLOSE_TASK = "trajectories.otlp_close"


@dataclass
class OtlpExportResult:
    accepted: int = 0  # agent spans stored (or already stored: re-export)
    ignored: int = 0  # spans that are not agent work
    rejected: int = 0
    closing: list[str] = field(default_factory=list)  # trace ids whose close was enqueued
    warnings: list[str] = field(default_factory=list)


def _past_quota(*, bank: Bank, token: ApiToken | None, valid, recorded: set[str], completing: list[str]) -> set[str]:
    """The traces of an export that the token's daily ingest quota leaves no room for (none without a quota):
    the completing traces beyond what is left and, once these use it up, every other trace not yet recorded
    (its spans would wait for a close that must drop them)."""
    left = ingest_quota_left(bank=bank, token=token)
    if left is None or len(completing) < left:
        return set()
    return {s["trace_id"] for s in valid} - recorded - set(completing[:left])


def lock_trace(*, bank_id: int, trace_id: str) -> None:
    """Serialize work on one trace of one bank until the transaction ends, so a
    root span never closes a trace while another export of its children is in flight."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"otlp:{bank_id}:{trace_id}"])


@transaction.atomic
def otlp_spans_ingest(*, bank: Bank, token: ApiToken | None, spans: list[dict]) -> OtlpExportResult:
    """Buffer the agent spans of one OTLP export (decoded by
    trajectories.otlp.decode_export) and, after commit, enqueue the close of
    every trace whose root span is in it: the trace becomes one trajectory
    (external_id = trace id).

    Promises: spans that are not agent work are counted as ignored and never
    stored; a re-exported span is stored once; spans of a trace already
    recorded are not buffered again; a span with invalid ids, or beyond
    settings.RB_MAX_STEPS spans in its trace, is rejected (counted, with the
    reason in ``warnings``). One export completes at most settings.RB_MAX_BATCH
    traces (the batch limit of the REST API): every span of the traces whose
    root comes later in the export is rejected. The token's daily ingest
    quota applies as to the REST API: the spans of traces it leaves no room
    for are rejected, never buffered. Never merges traces of different banks."""
    result = OtlpExportResult()
    problems: dict[str, int] = {}
    valid = []
    for span in spans:
        problem = span_problem(span)
        if problem:
            result.rejected += 1
            problems[problem] = problems.get(problem, 0) + 1
        else:
            valid.append(span)
    result.warnings += [f"{counted(n, 'span')} rejected: {problem}." for problem, n in problems.items()]

    recorded = set(
        Trajectory.objects.filter(bank=bank, external_id__in={s["trace_id"] for s in valid}).values_list(
            "external_id", flat=True
        )
    )
    completing = [t for t in dict.fromkeys(s["trace_id"] for s in valid if is_root(s)) if t not in recorded]
    limit = settings.RB_MAX_BATCH
    roots, refused = set(completing[:limit]), set(completing[limit:])
    unpaid = _past_quota(bank=bank, token=token, valid=valid, recorded=recorded, completing=completing[:limit])
    roots -= unpaid
    by_trace: dict[str, list[dict]] = {}
    over = over_quota = 0
    for span in valid:
        if span["trace_id"] in refused:
            over += 1
        elif span["trace_id"] in unpaid:
            over_quota += 1
        elif not is_agent_span(span):
            result.ignored += 1
        else:
            by_trace.setdefault(span["trace_id"], []).append(span)
    if refused:
        result.rejected += over
        result.warnings.append(
            f"{counted(over, 'span')} of {counted(len(refused), 'trace')} rejected: an export completes at most "
            f"{limit} traces (RB_MAX_BATCH); send fewer root spans per export."
        )
    if unpaid:
        result.rejected += over_quota
        result.warnings.append(
            f"{counted(over_quota, 'span')} of {counted(len(unpaid), 'trace')} rejected: this token's daily ingest "
            f"quota of {bank.ingest_quota_per_day} trajectories has no room left for them; nothing of them was kept, "
            "and the quota resets at 00:00 UTC."
        )

    late = 0
    for trace_id in sorted(set(by_trace) | roots):  # sorted: two exports lock shared traces in the same order
        lock_trace(bank_id=bank.pk, trace_id=trace_id)
        incoming = by_trace.get(trace_id, [])
        if trace_id in recorded:
            late += len(incoming)
            result.accepted += len(incoming)
            continue
        held = TraceSpan.objects.filter(bank=bank, trace_id=trace_id).count()
        room = max(settings.RB_MAX_STEPS - held, 0)
        if len(incoming) > room:
            result.rejected += len(incoming) - room
            result.warnings.append(
                f"{counted(len(incoming) - room, 'span')} of trace {trace_id} rejected: a trace holds at most "
                f"{settings.RB_MAX_STEPS} spans (RB_MAX_STEPS)."
            )
            incoming = incoming[:room]
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
        if trace_id in roots and held + len(incoming):
            result.closing.append(trace_id)
    if result.closing:
        # A lost message leaves the spans buffered: the sweeper closes the trace once it is idle.
        enqueue_on_commit(CLOSE_TASK, bank.pk, result.closing)
    if late:
        result.warnings.append(
            f"{counted(late, 'span')} {'belongs' if late == 1 else 'belong'} to traces already recorded as trajectories; not stored again."
        )
    return result
