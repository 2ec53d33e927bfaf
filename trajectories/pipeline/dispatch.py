"""The row is the queue entry. ``Trajectory.enqueued_at`` says when a task for
the row was last handed to the broker: ingest sets it in its INSERT, and a
publish that fails clears it (``enqueue_on_commit``'s failure hook), so the
happy path costs no extra write. The dispatcher (beat, every
RB_DISPATCH_INTERVAL seconds, on the maintenance queue) publishes the rows
whose publish failed; the sweeper re-sends rows queued longer than
RB_PIPELINE_STALE_SECONDS ago (a lost message) and never a row queued since.

``retry_at`` is when a scheduled transient-error retry is due; the per-stage
``*_attempts`` counters are the LLM budget of judge, distill and contrast,
kept on the row so one stage's retries do not spend the next one's. A stage
that runs out parks its rows (``awaiting_llm``, or its MaTTS group stays
``waiting_group``) with ``retry_at`` RB_LLM_RESUME_AFTER ahead; the sweeper
resumes them with a fresh budget once the endpoint answers a probe, and a
reviewer's Retry or ``rb_resume --retry-transient`` resumes them at once.

This module never imports trajectories.ingest or the tasks (ingest imports it)."""

from __future__ import annotations

import functools
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from reasoningbank_site.celery import enqueue_on_commit
from reasoningbank_site.errors import Conflict
from trajectories.models import Status, Trajectory
from trajectories.pipeline.transitions import trajectory_move_many

PROCESS = "trajectories.process"
# One message for the rows of one ingest transaction (a batch): a worker publishes PROCESS for each.
PROCESS_MANY = "trajectories.process_many"
DISTILL_GROUP = "trajectories.distill_group"
# Rows one dispatcher run publishes at most (the next run, seconds later, takes the rest).
DISPATCH_BATCH = 1000
# What a resumed stage starts again from: a fresh budget, no scheduled retry.
FRESH_BUDGET = {"judge_attempts": 0, "distill_attempts": 0, "contrast_attempts": 0, "retry_at": None}


def trajectories_unqueue(*, trajectory_ids: list[int]) -> None:
    """Record that nothing reached the broker for these rows (the publish
    failed): the dispatcher sends them within seconds."""
    Trajectory.objects.filter(pk__in=trajectory_ids).update(enqueued_at=None)


def trajectory_enqueue(trajectory_id: int) -> None:
    """Enqueue ``trajectories.process`` for one row after commit; when the
    publish fails, the row is marked unqueued for the dispatcher."""
    enqueue_on_commit(
        PROCESS, trajectory_id, on_failure=functools.partial(trajectories_unqueue, trajectory_ids=[trajectory_id])
    )


def trajectories_enqueue(trajectory_ids: list[int]) -> None:
    """Enqueue ``trajectories.process`` for each of these rows after commit,
    as one ``trajectories.process_many`` message when there are several (an
    ingested batch: the web process publishes once, a worker fans it out with
    trajectories_fan_out); when that publish fails, every row is marked
    unqueued for the dispatcher."""
    if len(trajectory_ids) == 1:
        trajectory_enqueue(trajectory_ids[0])
    elif trajectory_ids:
        ids = list(trajectory_ids)
        enqueue_on_commit(PROCESS_MANY, ids, on_failure=functools.partial(trajectories_unqueue, trajectory_ids=ids))


@transaction.atomic
def trajectories_fan_out(*, trajectory_ids: list[int]) -> list[int]:
    """A worker's half of trajectories_enqueue: publish ``trajectories.process``
    for each of these rows not yet picked up (``received``: a redelivered
    message skips rows already under way; a row deleted since is gone), each
    marked unqueued for the dispatcher if its publish fails, and return their
    ids. The rows keep the ``enqueued_at`` of their ingest, so the sweeper's
    staleness clock is unchanged."""
    ids = list(
        Trajectory.objects.filter(pk__in=trajectory_ids, status=Status.RECEIVED)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    for pk in ids:
        trajectory_enqueue(pk)
    return ids


def trajectories_claim(rows: QuerySet[Trajectory], *, also: dict | None = None) -> list[int]:
    """Mark ``rows`` as handed to the broker now (with the fields in ``also``),
    in one UPDATE over the rows this caller could lock (rows a concurrent
    sweeper holds are skipped), and return their ids, to be enqueued next."""
    with transaction.atomic():
        ids = list(rows.select_for_update(skip_locked=True).values_list("pk", flat=True))
        if ids:
            Trajectory.objects.filter(pk__in=ids).update(enqueued_at=timezone.now(), **(also or {}))
    return ids


def not_scheduled_after(moment) -> Q:
    """Rows with no transient retry scheduled later than ``moment``."""
    return Q(retry_at__isnull=True) | Q(retry_at__lte=moment)


def pipeline_dispatch(*, limit: int = DISPATCH_BATCH) -> list[int]:
    """Publish ``trajectories.process`` for rows waiting to be processed
    whose publish failed (``enqueued_at`` NULL) and whose scheduled retry,
    if any, is due; return their ids. A publish that fails again unmarks the
    row for the next run."""
    now = timezone.now()
    rows = (
        Trajectory.objects.filter(status__in=[Status.RECEIVED, Status.JUDGED], enqueued_at__isnull=True)
        .filter(not_scheduled_after(now))
        .order_by("created_at")[:limit]
    )
    ids = trajectories_claim(Trajectory.objects.filter(pk__in=list(rows.values_list("pk", flat=True))))
    for pk in ids:
        trajectory_enqueue(pk)
    return ids


def trajectories_schedule_retry(rows: QuerySet[Trajectory], *, countdown: float) -> None:
    """Record on ``rows`` that a retry is queued, due in ``countdown`` seconds."""
    now = timezone.now()
    rows.update(retry_at=now + timedelta(seconds=countdown), enqueued_at=now)


def trajectories_park(rows: QuerySet[Trajectory], *, detail: str) -> int:
    """Park rows whose stage ran out of transient retries: a judge or a
    distill waits in ``awaiting_llm``, a MaTTS group's members stay
    ``waiting_group``; either way with ``retry_at`` RB_LLM_RESUME_AFTER
    ahead and nothing queued. Returns how many rows were parked."""
    resume_at = timezone.now() + timedelta(seconds=settings.RB_LLM_RESUME_AFTER)
    detail = (
        f"{detail} Temporary: it resumes by itself once the LLM endpoint answers again "
        f"(from {timezone.localtime(resume_at):%Y-%m-%d %H:%M:%S %Z}), or now with Retry."
    )
    parked = trajectory_move_many(
        rows,
        from_=[Status.RECEIVED, Status.JUDGED],
        to=Status.AWAITING_LLM,
        detail=detail,
        also={"retry_at": resume_at},
    )
    return parked + trajectory_move_many(
        rows,
        from_=Status.WAITING_GROUP,
        to=Status.WAITING_GROUP,
        detail=detail,
        also={"retry_at": resume_at, "enqueued_at": None},
    )


def parked(now=None) -> QuerySet[Trajectory]:
    """Rows parked after transient exhaustion (nothing queued, a resume time
    set); with ``now``, those whose resume time has come."""
    rows = Trajectory.objects.filter(
        status__in=[Status.AWAITING_LLM, Status.WAITING_GROUP], retry_at__isnull=False, enqueued_at__isnull=True
    )
    return rows if now is None else rows.filter(retry_at__lte=now)


def trajectories_resume(rows: QuerySet[Trajectory]) -> tuple[list[int], list[tuple[int, str]]]:
    """Re-send ``rows`` (awaiting_llm rows and waiting MaTTS groups) with a
    fresh budget for every stage; return (trajectory ids, (bank id, group id)
    of the groups) enqueued."""
    singles = trajectories_claim(rows.filter(status=Status.AWAITING_LLM), also=FRESH_BUDGET)
    for pk in singles:
        trajectory_enqueue(pk)
    groups: list[tuple[int, str]] = []
    members = rows.filter(status=Status.WAITING_GROUP).exclude(group_id="")
    for bank_id, group_id in members.values_list("bank_id", "group_id").distinct():
        if trajectories_claim(
            Trajectory.objects.filter(bank_id=bank_id, group_id=group_id, status=Status.WAITING_GROUP),
            also=FRESH_BUDGET,
        ):
            groups.append((bank_id, group_id))
            enqueue_on_commit(DISTILL_GROUP, bank_id, group_id, True)
    return singles, groups


def is_parked(t: Trajectory) -> bool:
    """``t`` waits after temporary LLM errors (what ``parked`` selects)."""
    return t.status in (Status.AWAITING_LLM, Status.WAITING_GROUP) and t.retry_at is not None and t.enqueued_at is None


@transaction.atomic
def trajectory_retry(*, trajectory: Trajectory, author) -> None:
    """Resume now a trajectory parked after temporary LLM errors (with its
    MaTTS group, if it waits in one), each stage with a fresh budget; audited
    as ``trajectory.retry``. Raises Conflict when it is not parked that way:
    it is queued or running, finished, needs a human, or waits for an LLM
    endpoint to be configured."""
    t = Trajectory.objects.select_for_update().select_related("bank").get(pk=trajectory.pk)
    if not parked().filter(pk=t.pk).exists():
        raise Conflict(
            "Only a trajectory waiting after temporary LLM errors can be retried; "
            f"this one is {t.get_status_display().lower()}."
        )
    rows = Trajectory.objects.filter(pk=t.pk)
    if t.status == Status.WAITING_GROUP and t.group_id:
        rows = Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id)
    trajectories_resume(rows)
    audit_record(
        action=AuditAction.TRAJECTORY_RETRY,
        bank=t.bank,
        user=author,
        obj=t,
        before={"status": t.status, "retry_at": t.retry_at.isoformat()},
        after={"detail": t.status_detail[:300]},
    )
