"""Writes that remove what agents sent, because trajectories can hold personal
data: a bank's retention purges the raw record of old finished trajectories,
and one trajectory can be deleted (API and UI, through ``trajectory_delete``).

What is *raw* here: the steps (every thought, tool call and observation), the
final answer, and any copy of them still buffered as OTLP spans (TraceSpan).
What stays, because it is the bank's reviewed knowledge and its provenance:
the task, task id, agent, metadata, outcome, verdict, every judgment with its
rationale, and the memory items with their link to the trajectory."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from accounts.models import ApiToken, AuditEvent, Bank
from accounts.services import audit_record
from memories.models import Experience, MemoryItem, RetrievalEvent
from memories.services import retrieval_outcome_change
from reasoningbank_site.errors import Conflict, NotFound
from trajectories.models import InputFormat, Label, Status, TraceSpan, Trajectory

log = logging.getLogger(__name__)

# Only finished trajectories lose their steps: one in the pipeline still needs them.
PURGEABLE = (Status.DONE, Status.NEEDS_ATTENTION)
# A worker is reading the trajectory (an LLM call is under way): deleting it would race the stage.
BUSY = {Status.JUDGING: "judged", Status.DISTILLING: "distilled"}
PURGE_BATCH = 1000
DELETED_REPR = "(deleted trajectory)"


def _drop_trace_buffers(*, bank_id: int, trajectories) -> int:
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
            _drop_trace_buffers(bank_id=bank.pk, trajectories=rows)
            total += rows.update(steps=[], final_answer="", steps_purged_at=now, steps_purged_days=days)
        if len(ids) < batch_size:
            break
    if total:
        audit_record(
            action="trajectory.purge_steps",
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


@dataclass(frozen=True)
class DeletedTrajectory:
    public_id: str
    external_id: str | None
    items_kept: int


@transaction.atomic
def trajectory_delete(*, trajectory: Trajectory, user=None, token: ApiToken | None = None) -> DeletedTrajectory:
    """Delete one trajectory and everything that only copies what the agent
    sent; keep the bank's knowledge. Audited as ``trajectory.delete`` with who
    (``user`` or ``token``), its id and external id — never its content; older
    audit events of it lose the task they quoted.

    - its judgments are deleted with it (their rationales quote the run);
    - buffered OTLP spans of its trace are deleted;
    - its retrieval keeps the record of what was served, loses its query
      (the task text), and stops counting the trajectory's outcome (the
      Impact report moves with it);
    - a MaTTS group keeps its other members; the declared group size moves to
      the earliest remaining one, so the group still waits for its rollouts;
    - memory items distilled from it stay (reviewed knowledge) with their
      experience; their pages say they came from a deleted trajectory. An
      experience left with no item and no trajectory is deleted.

    Raises NotFound when the trajectory is already gone, Conflict
    ``trajectory_in_flight`` while a worker judges or distills it."""
    t = Trajectory.objects.select_for_update().filter(pk=trajectory.pk).first()
    if t is None:
        raise NotFound("No such trajectory in this bank.")
    if t.status in BUSY:
        raise Conflict(
            f"This trajectory is being {BUSY[t.status]} right now; delete it when that is over "
            "(a few seconds to minutes).",
            code="trajectory_in_flight",
        )
    if t.retrieval_id is not None:
        judged = int(t.verdict in Label.values)
        retrieval_outcome_change(
            retrieval_id=t.retrieval_id,
            linked=-1,
            judged=-judged,
            successes=-int(t.verdict == Label.SUCCESS),
            steps=-judged * t.step_count,
        )
        # The retrieval's query is the agent's task text: it goes too (nothing reads it back).
        RetrievalEvent.objects.filter(pk=t.retrieval_id).update(query="")
    if t.group_id and t.group_size:
        heir = (
            Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id, group_size__isnull=True)
            .exclude(pk=t.pk)
            .order_by("created_at", "pk")
            .first()
        )
        others_declare = (
            Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id, group_size__isnull=False)
            .exclude(pk=t.pk)
            .exists()
        )
        if heir is not None and not others_declare:
            Trajectory.objects.filter(pk=heir.pk).update(group_size=t.group_size)
    _drop_trace_buffers(bank_id=t.bank_id, trajectories=Trajectory.objects.filter(pk=t.pk))
    items_kept = MemoryItem.objects.filter(experience_id=t.experience_id).count() if t.experience_id else 0
    AuditEvent.objects.filter(bank_id=t.bank_id, object_type="trajectory", object_id=str(t.public_id)).update(
        object_repr=DELETED_REPR
    )
    public_id, external_id, experience_id, bank = str(t.public_id), t.external_id, t.experience_id, t.bank
    t.delete()
    if experience_id is not None:
        Experience.objects.filter(pk=experience_id, items__isnull=True, trajectories__isnull=True).delete()
    audit_record(
        action="trajectory.delete",
        bank=bank,
        user=user,
        token=token,
        obj=t,
        object_repr=DELETED_REPR,
        before={"id": public_id, "external_id": external_id, "status": t.status, "verdict": t.verdict or None},
        after={"items_kept": items_kept},
    )
    return DeletedTrajectory(public_id=public_id, external_id=external_id, items_kept=items_kept)
