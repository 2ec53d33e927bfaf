"""A bank's retention: the raw record of its old finished trajectories is
purged, because trajectories can hold personal data (one trajectory can be
deleted at once: trajectories.records.deletion).

What is *raw* here: the steps (every thought, tool call and observation), the
final answer, and any copy of them still buffered as OTLP spans (TraceSpan).
What stays, because it is the bank's reviewed knowledge and its provenance:
the task, task id, agent, metadata, outcome, verdict, every judgment with its
rationale, and the memory items with their link to the trajectory.

The steps and final answer are a RawRecord, a table of its own: a purge
DELETEs records there and never writes the trajectory row, so none of the
trajectory's indexes gains an entry, and the records table's own indexes gain
none either (a DELETE adds no index entry; VACUUM reclaims the space, which
new records reuse). Each bank's run that purged something is a RetentionRun."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from trajectories.models import InputFormat, Status, Trajectory
from trajectories.otlp.models import TraceSpan
from trajectories.records.models import RawRecord, RetentionRun
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
    """The next batch's raw records, locked (rows a deletion holds are
    skipped, not waited for: the next run takes them), in (created_at,
    trajectory) order from the records' own index ``rawrecord_bank_created``:
    the records still there are the ones not purged, so purged ones are never
    read again. Only finished trajectories' records are taken. ``after`` is
    the last batch's (created_at, pk): each batch starts where the last one
    stopped instead of rescanning the records of unfinished trajectories or
    the index entries of deleted ones."""
    qs = RawRecord.objects.select_for_update(skip_locked=True).filter(
        bank=bank, created_at__lt=cutoff, trajectory__status__in=PURGEABLE
    )
    if after is not None:
        created_at, pk = after
        qs = qs.filter(created_at__gte=created_at).filter(Q(created_at__gt=created_at) | Q(pk__gt=pk))
    return qs.order_by("created_at", "pk")


def _batch_purge(*, bank: Bank, cutoff, after, run: RetentionRun, archive, batch_size: int) -> tuple[int, int, tuple]:
    """Archive then delete one batch of raw records, in one transaction: the
    trajectories are locked too (one a worker holds, or that left the finished
    statuses meanwhile, keeps its record until the next run), the archive is
    written and fsynced before the DELETE commits, and the run is on record
    (saved with its count so far) when the batch's first record is gone.
    Returns (records read, records purged, the batch's last (created_at, pk));
    raises OSError, with nothing deleted, when the archive cannot be written."""
    with transaction.atomic():
        batch = list(
            purge_batch_query(bank=bank, cutoff=cutoff, after=after).values_list("pk", "created_at")[:batch_size]
        )
        if not batch:
            return 0, 0, after
        held = set(
            Trajectory.objects.select_for_update(skip_locked=True)
            .filter(pk__in=[pk for pk, _ in batch], status__in=PURGEABLE)
            .values_list("pk", flat=True)
        )
        ids = [pk for pk, _ in batch if pk in held]
        if archive is not None and ids:
            step_archive_append(
                archive, list(archived_rows(RawRecord.objects.filter(pk__in=ids).order_by("created_at", "pk")))
            )
        trace_buffers_drop(bank_id=bank.pk, trajectories=Trajectory.objects.filter(pk__in=ids))
        purged, _ = RawRecord.objects.filter(pk__in=ids).delete()
        if purged and run.pk is None:
            run.purged = purged
            run.save()
        elif purged:
            RetentionRun.objects.filter(pk=run.pk).update(purged=F("purged") + purged)
            run.purged += purged
    last_pk, last_created = batch[-1]
    return len(batch), purged, (last_created, last_pk)


def _bank_steps_purge(*, bank: Bank, now, batch_size: int) -> int:
    """Purge one bank in batches of ``batch_size`` records, each its own
    transaction, archiving each batch first (trajectories.records.step_archive).
    When the archive cannot be written the bank's remaining records are kept,
    and the failure is logged and audited. Returns how many were purged."""
    days = bank.step_retention_days
    cutoff = now - timedelta(days=days)
    archive = step_archive_path(bank=bank, now=now)
    run = RetentionRun(bank=bank, ran_at=now, retention_days=days, created_before=cutoff, archive=str(archive or ""))
    after, failure = None, None
    while True:
        try:
            read, _purged, after = _batch_purge(
                bank=bank, cutoff=cutoff, after=after, run=run, archive=archive, batch_size=batch_size
            )
        except OSError as exc:
            failure = f"{type(exc).__name__}: {exc}"
            log.error(
                "retention: bank %s keeps its steps, the archive %s could not be written: %s", bank.pk, archive, failure
            )
            break
        if read < batch_size:
            break
    total = run.purged
    summary = {"count": total, "retention_days": days, "created_before": cutoff, "archive": str(archive or "")}
    if total:
        audit_record(action=AuditAction.TRAJECTORY_PURGE_STEPS, bank=bank, after=summary)
    if failure:
        audit_record(action=AuditAction.TRAJECTORY_PURGE_STEPS_FAIL, bank=bank, after={**summary, "error": failure})
    return total


def trajectory_steps_purge_expired(*, now=None, batch_size: int = PURGE_BATCH) -> dict[int, int]:
    """Apply every bank's ``step_retention_days``: finished trajectories (done,
    needs_attention) created more than that many days ago lose their raw record
    (steps, final answer) and buffered OTLP spans; each bank's run that purged
    something is a RetentionRun (when, under which retention, its cutoff: a
    trajectory's ``steps_purged_at`` and ``steps_purged_days``). In flight ones
    are never touched. Idempotent (purged records are gone), bulk (one DELETE
    per batch), each batch's steps archived first
    (trajectories.records.step_archive), one audit event per bank that purged
    something, with the count and the archive. Returns {bank id: trajectories purged}."""
    now = now or timezone.now()
    purged = {}
    for bank in Bank.objects.filter(step_retention_days__isnull=False).select_related("team").order_by("pk"):
        count = _bank_steps_purge(bank=bank, now=now, batch_size=batch_size)
        if count:
            purged[bank.pk] = count
            log.info("retention: purged the steps of %s trajectories of bank %s", count, bank.pk)
    return purged
