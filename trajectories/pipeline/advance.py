"""The driver of the pipeline: runs every stage a trajectory is ready for,
from its current status (judge → distill, or MaTTS contrast once its group is
complete). The Celery task ``trajectories.process`` calls it."""

from __future__ import annotations

from trajectories.models import Status
from trajectories.pipeline.budget import budget_park, budget_spent
from trajectories.pipeline.distill import distill_row, distill_take
from trajectories.pipeline.judge import judge_row
from trajectories.pipeline.llm import llm_configured
from trajectories.pipeline.matts import trajectory_group_distill
from trajectories.pipeline.rows import NO_LLM_DETAIL, NOT_LEARNT_DETAIL, trajectory_row
from trajectories.pipeline.transitions import trajectory_move


def trajectory_advance(*, trajectory_id: int) -> None:
    """Run every stage the trajectory is ready for, from its current status:
    received → judged (judge, or skipped when a verdict exists) → distilling
    → done, or → waiting_group for MaTTS members; a trajectory that does not
    learn (``learn=False``: an evaluation try) goes from judged to done. Stops quietly when another
    worker owns the row or nothing is left to do. Raises LLMTransientError
    (after handing the row back) for the caller to retry later."""
    t = None
    for _ in range(4):  # each pass moves the status forward; the bound guards against a loop
        if t is None:
            t = trajectory_row(trajectory_id)  # the stages below work on this row: read once
            if t is None:
                return
        if t.status in (Status.RECEIVED, Status.AWAITING_LLM):
            if t.verdict:  # trusted agent signal or a human verdict: no judge needed
                trajectory_move(
                    t.pk,
                    from_=[Status.RECEIVED, Status.AWAITING_LLM],
                    to=Status.JUDGED,
                    detail=f"Verdict {t.verdict} given; judge skipped.",
                )
                t = None  # read again: another worker may have moved it first
                continue
            if not llm_configured():
                trajectory_move(t.pk, from_=Status.RECEIVED, to=Status.AWAITING_LLM, detail=NO_LLM_DETAIL)
                return
            if budget_spent(t):
                budget_park(t, from_=Status.RECEIVED)
                return
            # A MaTTS member waits for its group once judged; any other that learns goes on to distillation,
            # taken by the judge's own transaction (never seen in judged: one commit fewer).
            distill_next = not t.group_id and t.learn
            if not judge_row(t, distill_next=distill_next):
                return
            if distill_next:
                distill_row(t)
                return
            # Judged by this call: the next stage is known without reading the row again.
            t.status = Status.JUDGED
            continue
        elif t.status == Status.JUDGED:
            if not t.learn:  # an evaluation try: its verdict is all it is for
                trajectory_move(t.pk, from_=Status.JUDGED, to=Status.DONE, detail=NOT_LEARNT_DETAIL)
                return
            if t.group_id:
                if trajectory_move(
                    t.pk,
                    from_=Status.JUDGED,
                    to=Status.WAITING_GROUP,
                    detail="Waiting for the rest of its MaTTS group.",
                ):
                    trajectory_group_distill(bank_id=t.bank_id, group_id=t.group_id)
                return
            if not llm_configured():
                trajectory_move(t.pk, from_=Status.JUDGED, to=Status.AWAITING_LLM, detail=NO_LLM_DETAIL)
                return
            if budget_spent(t):
                budget_park(t, from_=Status.JUDGED)
                return
            if distill_take(t.pk):
                distill_row(t)
            return
        elif t.status == Status.WAITING_GROUP:
            trajectory_group_distill(bank_id=t.bank_id, group_id=t.group_id)
            return
        else:  # judging/distilling (someone has it), done, needs_attention
            return
