"""A bank's retention: the raw record of its old finished trajectories is
purged, because trajectories can hold personal data (one trajectory can be
deleted at once: trajectories.records.deletion).

What is *raw* here: the steps (every thought, tool call and observation), the
final answer, and any copy of them still buffered as OTLP spans (TraceSpan).
What stays, because it is the bank's reviewed knowledge and its provenance:
the task, task id, agent, metadata, outcome, verdict, every judgment with its
rationale, and the memory items with their link to the trajectory."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from trajectories.models import InputFormat, Status, Trajectory
from trajectories.otlp.models import TraceSpan
from trajectories.records.step_archive import archived_rows, step_archive_append, step_archive_path

log = logging.getLogger(__name__)

# Only finished trajectories lose their steps: one in the pipeline still needs them.
PURGEABLE = (Status.DONE, Status.NEEDS_ATTENTION)
PURGE_BATCH = 1000


def trace_buffers_drop(*, bank_id: int, trajectories) -> int:
    """Delete buffered OTLP spans of the traces these trajectories came from
    (external_id = trace id): spans that arrived after the trace was closed."""
    trace_ids = list(
        trajectories.filter(input_format=InputFormat.OTLP, external_id__isnull=False).values_list(
            "external_id", flat=True
        )
    )
    if not trace_ids:
        return 0
    deleted, _ = TraceSpan.objects.filter(bank_id=bank_id, trace_id__in=trace_ids).delete()
    return deleted


def purge_batch_query(*, bank: Bank, cutoff, after: tuple | None):
    """The next batch's rows, locked (rows a worker or a deletion holds are
    skipped, not waited for: the next run takes them), in (created_at, pk)
    order from the partial index ``trajectory_purgeable``, which holds only
    finished, unpurged rows, so already purged rows are never read again.
    ``after`` is the last batch's (created_at, pk): each batch starts where the
    last one stopped instead of rescanning its dead index entries."""
    qs = Trajectory.objects.select_for_update(skip_locked=True).filter(
        bank=bank, status__in=PURGEABLE, created_at__lt=cutoff, steps_purged_at__isnull=True
    )
    if after is not None:
        created_at, pk = after
        qs = qs.filter(created_at__gte=created_at).filter(Q(created_at__gt=created_at) | Q(pk__gt=pk))
    return qs.order_by("created_at", "pk")


def _batch_purge(*, bank: Bank, cutoff, after, now, days: int, batch_size: int, archive) -> tuple[int, tuple | None]:
    """Archive then clear one batch, in one transaction: the archive is
    written and fsynced before the UPDATE commits. Returns (rows purged, the
    batch's last (created_at, pk)); raises OSError, with nothing cleared, when
    the archive cannot be written."""
    with transaction.atomic():
        batch_rows = purge_batch_query(bank=bank, cutoff=cutoff, after=after)
        rows = batch_rows.values("pk", "created_at") if archive is None else archived_rows(batch_rows)
        rows = list(rows[:batch_size])
        if not rows:
            return 0, None
        ids = [row["pk"] for row in rows]
        if archive is not None:
            step_archive_append(archive, rows)
        batch = Trajectory.objects.filter(pk__in=ids)
        trace_buffers_drop(bank_id=bank.pk, trajectories=batch)
        purged = batch.update(steps=[], final_answer="", steps_purged_at=now, steps_purged_days=days)
    return purged, (rows[-1]["created_at"], ids[-1])


def _bank_steps_purge(*, bank: Bank, now, batch_size: int) -> int:
    """Purge one bank in batches of ``batch_size`` rows, each its own
    transaction, archiving each batch first (trajectories.records.step_archive).
    When the archive cannot be written the bank's remaining rows keep their
    steps, and the failure is logged and audited. Returns how many were purged."""
    days = bank.step_retention_days
    cutoff = now - timedelta(days=days)
    archive = step_archive_path(bank=bank, now=now)
    total, after, failure = 0, None, None
    while True:
        try:
            purged, after = _batch_purge(
                bank=bank, cutoff=cutoff, after=after, now=now, days=days, batch_size=batch_size, archive=archive
            )
        except OSError as exc:
            failure = f"{type(exc).__name__}: {exc}"
            log.error(
                "retention: bank %s keeps its steps, the archive %s could not be written: %s", bank.pk, archive, failure
            )
            break
        total += purged
        if purged < batch_size:
            break
    summary = {"count": total, "retention_days": days, "created_before": cutoff, "archive": str(archive or "")}
    if total:
        audit_record(action=AuditAction.TRAJECTORY_PURGE_STEPS, bank=bank, after=summary)
    if failure:
        audit_record(action=AuditAction.TRAJECTORY_PURGE_STEPS_FAIL, bank=bank, after={**summary, "error": failure})
    return total


def trajectory_steps_purge_expired(*, now=None, batch_size: int = PURGE_BATCH) -> dict[int, int]:
    """Apply every bank's ``step_retention_days``: finished trajectories (done,
    needs_attention) created more than that many days ago lose their steps,
    final answer and buffered OTLP spans, and record when and under which
    retention (``steps_purged_at``, ``steps_purged_days``). In flight ones are
    never touched. Idempotent (purged rows are skipped), bulk (one UPDATE per
    batch), each batch's steps archived first (trajectories.records.step_archive),
    one audit event per bank that purged something, with the count and the archive.
    Returns {bank id: trajectories purged}."""
    now = now or timezone.now()
    purged = {}
    for bank in Bank.objects.filter(step_retention_days__isnull=False).select_related("team").order_by("pk"):
        count = _bank_steps_purge(bank=bank, now=now, batch_size=batch_size)
        if count:
            purged[bank.pk] = count
            log.info("retention: purged the steps of %s trajectories of bank %s", count, bank.pk)
    return purged
