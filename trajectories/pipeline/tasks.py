"""Celery adapters for the learning pipeline: take ids, call one stage.

Tasks import stages and services at the top; those never import this module
(they enqueue by the registered names below through ``enqueue_on_commit``).
Celery's autodiscovery imports ``trajectories.tasks``, which imports this.
Function names end in ``_task`` so they cannot collide with a service's.

Transient LLM errors (timeouts, 429, 5xx, connection, a 200 that is not a
chat completion) retry with exponential backoff, honouring the server's
Retry-After, up to RB_LLM_MAX_RETRIES per stage (counted on the row: judge,
distill and contrast each have their own budget); then the rows are parked
until the endpoint answers again (trajectories.pipeline.dispatch), never
``needs_attention``: that is for permanent errors. A task that finds the
database down is retried with backoff (db_outage_retry), never discarded.
Late acks are safe because every stage step is compare-and-set."""

from __future__ import annotations

import logging
import random

from celery import shared_task
from django.conf import settings
from django.db.models import QuerySet

from reasoningbank_site.celery import db_outage_retry
from reasoningbank_site.text import counted
from trajectories.models import Status, Trajectory
from trajectories.otlp.close import otlp_traces_close
from trajectories.pipeline.advance import trajectory_advance
from trajectories.pipeline.dispatch import (
    pipeline_dispatch,
    trajectories_fan_out,
    trajectories_park,
    trajectories_schedule_retry,
)
from trajectories.pipeline.distill import trajectory_distill
from trajectories.pipeline.llm_calls import CONTRAST_CALL
from trajectories.pipeline.llm_errors import LLMTransientError
from trajectories.pipeline.matts import trajectory_group_distill
from trajectories.pipeline.sweeper import pipeline_sweep
from trajectories.records.retention import trajectory_steps_purge_expired

log = logging.getLogger(__name__)


def retry_countdown(retries: int, retry_after: float | None = None) -> float:
    """Seconds before retry number ``retries + 1``: exponential from
    RB_LLM_RETRY_BACKOFF, capped at RB_LLM_RETRY_BACKOFF_MAX, with jitter,
    and never sooner than the server's Retry-After."""
    base = min(settings.RB_LLM_RETRY_BACKOFF * (2**retries), settings.RB_LLM_RETRY_BACKOFF_MAX)
    backoff = base * random.uniform(0.75, 1.0)
    return max(backoff, retry_after or 0.0)


def _retry_or_park(task, exc: LLMTransientError, rows: QuerySet[Trajectory], what: str):
    """Retry the task later, or park ``rows`` once the failed stage's budget is spent. The
    stage (``exc.call``, set by llm_calls.llm_ask) counted the failure on the rows."""
    call = getattr(exc, "call", None)
    counts = list(rows.values_list(call.attempts, flat=True)) if call is not None else []
    failures = max(counts) if counts else task.request.retries + 1
    what = call.doing if call is not None else what
    if failures > settings.RB_LLM_MAX_RETRIES:
        detail = f"{what} gave up after {failures} attempts on temporary errors (last: {str(exc).rstrip('.')})."
        log.warning("%s (trajectories %s)", detail, list(rows.values_list("pk", flat=True)))
        trajectories_park(rows, detail=detail)
        return None
    countdown = retry_countdown(failures - 1, exc.retry_after)
    trajectories_schedule_retry(rows, countdown=countdown)
    raise task.retry(exc=exc, countdown=countdown, max_retries=None)


def _rows_of(exc: LLMTransientError, trajectory_id: int) -> QuerySet[Trajectory]:
    """The rows a failed stage handed back: the trajectory, or its MaTTS group's waiting members."""
    row = Trajectory.objects.filter(pk=trajectory_id).values("bank_id", "group_id").first()
    if getattr(exc, "call", None) is CONTRAST_CALL and row and row["group_id"]:
        return Trajectory.objects.filter(bank_id=row["bank_id"], group_id=row["group_id"], status=Status.WAITING_GROUP)
    return Trajectory.objects.filter(pk=trajectory_id)


@shared_task(bind=True, name="trajectories.process", ignore_result=True, acks_late=True, **db_outage_retry())
def trajectory_process_task(self, trajectory_id: int) -> None:
    """Judge → distill (or wait for its MaTTS group) one trajectory."""
    try:
        trajectory_advance(trajectory_id=trajectory_id)
    except LLMTransientError as exc:
        return _retry_or_park(self, exc, _rows_of(exc, trajectory_id), "The LLM")


@shared_task(name="trajectories.process_many", ignore_result=True, acks_late=True, **db_outage_retry())
def trajectories_process_many_task(trajectory_ids: list[int]) -> None:
    """An ingested batch: one ``trajectories.process`` per trajectory (see trajectories.pipeline.dispatch)."""
    trajectories_fan_out(trajectory_ids=trajectory_ids)


@shared_task(bind=True, name="trajectories.distill", ignore_result=True, acks_late=True, **db_outage_retry())
def trajectory_distill_alone_task(self, trajectory_id: int) -> None:
    """Distill one judged trajectory on its own (a MaTTS group that closed with one member)."""
    try:
        trajectory_distill(trajectory_id=trajectory_id)
    except LLMTransientError as exc:
        return _retry_or_park(self, exc, Trajectory.objects.filter(pk=trajectory_id), "The LLM")


@shared_task(bind=True, name="trajectories.distill_group", ignore_result=True, acks_late=True, **db_outage_retry())
def trajectory_group_distill_task(self, bank_id: int, group_id: str, force: bool = False) -> None:
    """Contrast-distill a MaTTS parallel group if it is complete (or ``force``)."""
    try:
        trajectory_group_distill(bank_id=bank_id, group_id=group_id, force=force)
    except LLMTransientError as exc:
        members = Trajectory.objects.filter(bank_id=bank_id, group_id=group_id, status=Status.WAITING_GROUP)
        return _retry_or_park(self, exc, members, "MaTTS contrast distillation")


@shared_task(name="trajectories.otlp_close", ignore_result=True, acks_late=True, **db_outage_retry())
def otlp_traces_close_task(bank_id: int, trace_ids: list[str]) -> None:
    """Close the traces whose root span an OTLP export carried (see trajectories.otlp.close)."""
    report = otlp_traces_close(bank_id=bank_id, trace_ids=trace_ids)
    if report.failed:
        log.warning("OTLP close: dropped %s: %s", counted(len(report.failed), "trace"), report.failed)


@shared_task(name="trajectories.sweep", ignore_result=True, acks_late=True)
def pipeline_sweep_task() -> None:
    """Beat, every RB_SWEEP_INTERVAL_SECONDS: re-enqueue stalled, orphaned or forgotten work (see trajectories.pipeline.sweeper)."""
    report = pipeline_sweep()
    if report.total:
        log.info("sweeper: %s", "; ".join(report.lines()))


@shared_task(name="trajectories.purge_steps", ignore_result=True, acks_late=True)
def trajectory_steps_purge_task() -> None:
    """Beat, hourly: apply each bank's step retention (see trajectories.records.retention)."""
    trajectory_steps_purge_expired()


@shared_task(name="trajectories.dispatch", ignore_result=True, acks_late=True)
def pipeline_dispatch_task() -> None:
    """Beat, every few seconds: publish rows whose publish failed (see trajectories.pipeline.dispatch)."""
    sent = pipeline_dispatch()
    if sent:
        log.info(
            "dispatcher: published %s whose publish had failed: %s",
            counted(len(sent), "trajectory", "trajectories"),
            sent,
        )
