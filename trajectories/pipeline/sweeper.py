"""The sweeper: picks up what a crash, a lost broker message or a missing
LLM endpoint left behind, and enqueues it again. Run every
RB_SWEEP_INTERVAL_SECONDS (30 s) by Celery beat (``trajectories.sweep``, on
the maintenance queue) and on demand by ``manage.py rb_resume``. What is queued is marked on the rows
(trajectories.pipeline.dispatch), so nothing queued and not yet stale is sent twice."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db.models import Max, Min, Q
from django.utils import timezone

from reasoningbank_site.celery import enqueue_on_commit
from reasoningbank_site.text import counted
from trajectories.models import Status, Trajectory
from trajectories.otlp.close import otlp_traces_close_idle
from trajectories.pipeline.dispatch import (
    DISTILL_GROUP,
    not_scheduled_after,
    parked,
    trajectories_claim,
    trajectories_resume,
    trajectory_enqueue,
)
from trajectories.pipeline.held import backends_alive, worker_gone
from trajectories.pipeline.llm import llm_configured, llm_probe
from trajectories.pipeline.rows import NO_LLM_DETAIL
from trajectories.pipeline.transitions import trajectory_move_many


@dataclass
class SweepReport:
    orphaned: list[int] = field(default_factory=list)  # judging/distilling, the worker's backend gone
    stale_judging: list[int] = field(default_factory=list)
    stale_distilling: list[int] = field(default_factory=list)
    never_picked_up: list[int] = field(default_factory=list)
    resumed_awaiting_llm: list[int] = field(default_factory=list)
    resumed_groups: list[tuple[int, str]] = field(default_factory=list)
    groups_closed: list[tuple[int, str]] = field(default_factory=list)
    otlp_traces_closed: list[tuple[int, str]] = field(default_factory=list)
    otlp_traces_failed: list[tuple[int, str, str]] = field(default_factory=list)  # (bank, trace, why): dropped

    @property
    def total(self) -> int:
        return sum(
            len(v)
            for v in (
                self.orphaned,
                self.stale_judging,
                self.stale_distilling,
                self.never_picked_up,
                self.resumed_awaiting_llm,
                self.resumed_groups,
                self.groups_closed,
                self.otlp_traces_closed,
                self.otlp_traces_failed,
            )
        )

    def lines(self) -> list[str]:
        return [
            f"re-enqueued {counted(len(self.orphaned), 'trajectory', 'trajectories')} whose worker was lost "
            f"(judging or distilling, its database session gone): {self.orphaned}",
            f"re-enqueued {counted(len(self.stale_judging), 'trajectory', 'trajectories')} stuck in judging: {self.stale_judging}",
            f"re-enqueued {counted(len(self.stale_distilling), 'trajectory', 'trajectories')} stuck in distilling: {self.stale_distilling}",
            f"re-enqueued {counted(len(self.never_picked_up), 'received trajectory', 'received trajectories')} never picked up: {self.never_picked_up}",
            f"resumed {counted(len(self.resumed_awaiting_llm), 'trajectory', 'trajectories')} awaiting an LLM: {self.resumed_awaiting_llm}"
            + ("" if llm_configured() else " (no LLM endpoint configured)"),
            f"resumed {counted(len(self.resumed_groups), 'MaTTS group')} parked after temporary LLM errors: "
            f"{[g for _b, g in self.resumed_groups]}",
            f"closed {counted(len(self.groups_closed), 'expired MaTTS group')}: {[g for _b, g in self.groups_closed]}",
            f"closed {counted(len(self.otlp_traces_closed), 'idle OTLP trace')} into trajectories: "
            f"{[t for _b, t in self.otlp_traces_closed]}",
            f"dropped {counted(len(self.otlp_traces_failed), 'OTLP trace')} that could not become trajectories: "
            f"{[f'{t} ({why})' for _b, t, why in self.otlp_traces_failed]}",
        ]


def pipeline_sweep(
    *, stale_seconds: int | None = None, group_wait_seconds: int | None = None, otlp_idle_seconds: int | None = None
) -> SweepReport:
    """Pick up what was left behind, and enqueue it: rows judging (or a single
    trajectory distilling) whose worker's database backend is gone
    (trajectories.pipeline.held) and that have not moved for
    RB_PIPELINE_ORPHAN_SECONDS (its worker died) are
    moved back a stage; any other row left judging or distilling longer than
    ``stale_seconds`` is too; rows waiting to be processed that nothing was
    queued for within ``stale_seconds`` (a lost message) are re-sent; awaiting_llm rows resume
    once the endpoint answers a probe (rows parked after transient errors
    only when their ``retry_at`` has come, with a fresh budget); MaTTS groups
    waiting longer than ``group_wait_seconds`` are closed with what arrived;
    OTLP traces idle for ``otlp_idle_seconds`` become trajectories (their
    root span never came; one that cannot is dropped and reported, and never
    stops the others). A row queued since, or whose scheduled retry is
    not due, is left alone. Safe to run concurrently with workers: every move
    is compare-and-set, every re-send claims its rows first."""
    stale = timedelta(seconds=settings.RB_PIPELINE_STALE_SECONDS if stale_seconds is None else stale_seconds)
    wait = timedelta(seconds=settings.RB_MATTS_GROUP_WAIT_SECONDS if group_wait_seconds is None else group_wait_seconds)
    now = timezone.now()
    stale_before = now - stale
    report = SweepReport()
    old = Trajectory.objects.filter(updated_at__lte=stale_before)
    # Nothing handed to the broker for it since stale_before, and no retry scheduled after that.
    unqueued = (Q(enqueued_at__isnull=True) | Q(enqueued_at__lte=stale_before)) & not_scheduled_after(stale_before)
    requeued = {"enqueued_at": now}

    orphan_before = now - timedelta(seconds=settings.RB_PIPELINE_ORPHAN_SECONDS)
    lost = (
        Trajectory.objects.filter(updated_at__lte=orphan_before)
        .filter(Q(status=Status.JUDGING) | Q(status=Status.DISTILLING, group_id=""))
        .exclude(updated_at__lte=stale_before)  # the stale rule below has those
    )
    lost = list(lost.values_list("pk", "status", "taken_by", "updated_at"))
    alive = backends_alive() if settings.RB_PIPELINE_ORPHAN_SECONDS > 0 and lost else {}
    for pk, status, taken_by, moved_at in lost:
        if settings.RB_PIPELINE_ORPHAN_SECONDS <= 0 or not worker_gone(taken_by, moved_at, alive):
            continue
        # Compare-and-set: a row that moved since it was read (its worker was alive after all) stays.
        if trajectory_move_many(
            Trajectory.objects.filter(pk=pk, updated_at__lte=moved_at),
            from_=status,
            to=Status.RECEIVED if status == Status.JUDGING else Status.JUDGED,
            detail=f"Re-queued by the sweeper: its {status} worker is gone (its database session ended).",
            also=requeued,
        ):
            report.orphaned.append(pk)
            trajectory_enqueue(pk)
    for pk in old.filter(status=Status.JUDGING).values_list("pk", flat=True):
        if trajectory_move_many(
            Trajectory.objects.filter(pk=pk, updated_at__lte=stale_before),
            from_=Status.JUDGING,
            to=Status.RECEIVED,
            detail="Re-queued by the sweeper: judging stalled (worker lost?).",
            also=requeued,
        ):
            report.stale_judging.append(pk)
            trajectory_enqueue(pk)
    for pk, group_id, bank_id in old.filter(status=Status.DISTILLING).values_list("pk", "group_id", "bank_id"):
        back = Status.WAITING_GROUP if group_id else Status.JUDGED
        if trajectory_move_many(
            Trajectory.objects.filter(pk=pk, updated_at__lte=stale_before),
            from_=Status.DISTILLING,
            to=back,
            detail="Re-queued by the sweeper: distillation stalled (worker lost?).",
            also=requeued,
        ):
            report.stale_distilling.append(pk)
            if group_id:
                if (bank_id, group_id) not in report.groups_closed:
                    report.groups_closed.append((bank_id, group_id))
                    enqueue_on_commit(DISTILL_GROUP, bank_id, group_id, True)
            else:
                trajectory_enqueue(pk)
    forgotten = old.filter(unqueued, status__in=[Status.RECEIVED, Status.JUDGED]).exclude(
        pk__in=report.stale_judging + report.stale_distilling
    )
    report.never_picked_up = trajectories_claim(forgotten)
    for pk in report.never_picked_up:
        trajectory_enqueue(pk)
    if llm_configured():
        waiting = Trajectory.objects.filter(unqueued, status=Status.AWAITING_LLM, retry_at__isnull=True)
        # Complete MaTTS groups that found no LLM when their last member was judged.
        stalled = Trajectory.objects.filter(unqueued, status=Status.WAITING_GROUP, status_detail=NO_LLM_DETAIL)
        if (waiting.exists() or stalled.exists() or parked(now).exists()) and llm_probe():
            report.resumed_awaiting_llm = trajectories_claim(waiting)
            for pk in report.resumed_awaiting_llm:
                trajectory_enqueue(pk)
            members = Trajectory.objects.filter(pk__in=trajectories_claim(stalled))
            for bank_id, group_id in members.values_list("bank_id", "group_id").distinct():
                enqueue_on_commit(DISTILL_GROUP, bank_id, group_id, False)
            singles, groups = trajectories_resume(parked(now))
            report.resumed_awaiting_llm += singles
            report.resumed_groups = groups
    expired = (
        Trajectory.objects.filter(status=Status.WAITING_GROUP)
        .values("bank_id", "group_id")
        .annotate(first=Min("created_at"), due=Max("retry_at"))
        .filter(first__lte=now - wait)
        .filter(Q(due__isnull=True) | Q(due__lte=now))
    )
    for row in expired:
        key = (row["bank_id"], row["group_id"])
        if key not in report.groups_closed and key not in report.resumed_groups:
            report.groups_closed.append(key)
            enqueue_on_commit(DISTILL_GROUP, key[0], key[1], True)
    idle = otlp_traces_close_idle(idle_seconds=otlp_idle_seconds)
    report.otlp_traces_closed, report.otlp_traces_failed = idle.closed, idle.failed
    return report
