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
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from trajectories.models import InputFormat, Status, Trajectory
from trajectories.otlp.models import TraceSpan

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


def _bank_steps_purge(*, bank: Bank, now, batch_size: int) -> int:
    """Purge one bank in batches of ``batch_size`` rows, each its own
    transaction (rows a worker or a deletion holds are skipped, not waited
    for: the next run takes them). Returns how many were purged."""
    days = bank.step_retention_days
    cutoff = now - timedelta(days=days)
    total = 0
    while True:
        with transaction.atomic():
            ids = list(
                Trajectory.objects.select_for_update(skip_locked=True)
                .filter(bank=bank, status__in=PURGEABLE, created_at__lt=cutoff, steps_purged_at__isnull=True)
                .order_by("pk")
                .values_list("pk", flat=True)[:batch_size]
            )
            if not ids:
                break
            rows = Trajectory.objects.filter(pk__in=ids)
            trace_buffers_drop(bank_id=bank.pk, trajectories=rows)
            total += rows.update(steps=[], final_answer="", steps_purged_at=now, steps_purged_days=days)
        if len(ids) < batch_size:
            break
    if total:
        audit_record(
            action=AuditAction.TRAJECTORY_PURGE_STEPS,
            bank=bank,
            after={"count": total, "retention_days": days, "created_before": cutoff},
        )
    return total


def trajectory_steps_purge_expired(*, now=None, batch_size: int = PURGE_BATCH) -> dict[int, int]:
    """Apply every bank's ``step_retention_days``: finished trajectories (done,
    needs_attention) created more than that many days ago lose their steps,
    final answer and buffered OTLP spans, and record when and under which
    retention (``steps_purged_at``, ``steps_purged_days``). In flight ones are
    never touched. Idempotent (purged rows are skipped), bulk (one UPDATE per
    batch), one audit event per bank that purged something, with the count.
    Returns {bank id: trajectories purged}."""
    now = now or timezone.now()
    purged = {}
    for bank in Bank.objects.filter(step_retention_days__isnull=False).select_related("team").order_by("pk"):
        count = _bank_steps_purge(bank=bank, now=now, batch_size=batch_size)
        if count:
            purged[bank.pk] = count
            log.info("retention: purged the steps of %s trajectories of bank %s", count, bank.pk)
    return purged
