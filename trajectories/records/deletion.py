"""Deleting one trajectory (API and UI) and everything that only copies what
the agent sent, because trajectories can hold personal data; the bank's
reviewed knowledge and its provenance stay (see trajectories.records.retention
for what is raw)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import ApiToken, AuditEvent
from memories.items.experiences import Experience
from memories.items.models import MemoryItem
from memories.serving.models import RetrievalEvent
from memories.serving.tallies import counters_difference, retrieval_outcome_change
from reasoningbank_site.errors import Conflict, NotFound
from trajectories.judging.verdicts import outcome_counters
from trajectories.models import Status, Trajectory
from trajectories.records.retention import trace_buffers_drop

# A worker is reading the trajectory (an LLM call is under way): deleting it would race the stage.
BUSY = {Status.JUDGING: "judged", Status.DISTILLING: "distilled"}
DELETED_REPR = "(deleted trajectory)"


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
        gone = counters_difference({}, outcome_counters(t, t.verdict))
        retrieval_outcome_change(retrieval_id=t.retrieval_id, **{**gone, "linked": -1})
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
    trace_buffers_drop(bank_id=t.bank_id, trajectories=Trajectory.objects.filter(pk=t.pk))
    items_kept = MemoryItem.objects.filter(experience_id=t.experience_id).count() if t.experience_id else 0
    AuditEvent.objects.filter(bank_id=t.bank_id, object_type="trajectory", object_id=str(t.public_id)).update(
        object_repr=DELETED_REPR
    )
    public_id, external_id, experience_id, bank = str(t.public_id), t.external_id, t.experience_id, t.bank
    t.delete()
    if experience_id is not None:
        Experience.objects.filter(pk=experience_id, items__isnull=True, trajectories__isnull=True).delete()
    audit_record(
        action=AuditAction.TRAJECTORY_DELETE,
        bank=bank,
        user=user,
        token=token,
        obj=t,
        object_repr=DELETED_REPR,
        before={"id": public_id, "external_id": external_id, "status": t.status, "verdict": t.verdict or None},
        after={"items_kept": items_kept},
    )
    return DeletedTrajectory(public_id=public_id, external_id=external_id, items_kept=items_kept)
