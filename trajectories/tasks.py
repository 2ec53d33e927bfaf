"""Celery adapters for the learning pipeline: take ids, call one stage.

Tasks import stages and services at the top; those never import this module
(they enqueue by the registered names below through ``enqueue_on_commit``).
Function names end in ``_task`` so they cannot collide with a service's.

Transient LLM errors (timeouts, 429, 5xx, connection) retry with
exponential backoff, honouring the server's Retry-After, up to
RB_LLM_MAX_RETRIES; then the trajectory is ``needs_attention`` with the
error. Late acks are safe because every stage step is compare-and-set."""

from __future__ import annotations

import logging
import random

from celery import shared_task
from django.conf import settings

from trajectories.experiments import experiment_fail, experiment_run
from trajectories.llm import LLMTransientError
from trajectories.models import Status, Trajectory
from trajectories.retention import trajectory_steps_purge_expired
from trajectories.stages import trajectory_advance, trajectory_distill, trajectory_group_distill
from trajectories.sweeper import pipeline_sweep
from trajectories.transitions import trajectory_mark_needs_attention

log = logging.getLogger(__name__)


def retry_countdown(retries: int, retry_after: float | None = None) -> float:
    """Seconds before retry number ``retries + 1``: exponential from
    RB_LLM_RETRY_BACKOFF, capped at RB_LLM_RETRY_BACKOFF_MAX, with jitter,
    and never sooner than the server's Retry-After."""
    base = min(settings.RB_LLM_RETRY_BACKOFF * (2**retries), settings.RB_LLM_RETRY_BACKOFF_MAX)
    backoff = base * random.uniform(0.75, 1.0)
    return max(backoff, retry_after or 0.0)


def _retry_or_give_up(task, exc: LLMTransientError, trajectory_id: int | None, what: str):
    retries = task.request.retries
    if retries >= settings.RB_LLM_MAX_RETRIES:
        detail = f"{what} gave up after {retries + 1} attempts; last error: {exc}"
        log.warning("%s (trajectory %s)", detail, trajectory_id)
        if trajectory_id is not None:
            trajectory_mark_needs_attention(trajectory_id=trajectory_id, detail=detail)
        return None
    raise task.retry(
        exc=exc, countdown=retry_countdown(retries, exc.retry_after), max_retries=settings.RB_LLM_MAX_RETRIES
    )


@shared_task(bind=True, name="trajectories.process", ignore_result=True, acks_late=True)
def trajectory_process_task(self, trajectory_id: int) -> None:
    """Judge → distill (or wait for its MaTTS group) one trajectory."""
    try:
        trajectory_advance(trajectory_id=trajectory_id)
    except LLMTransientError as exc:
        return _retry_or_give_up(self, exc, trajectory_id, "The LLM")


@shared_task(bind=True, name="trajectories.distill", ignore_result=True, acks_late=True)
def trajectory_distill_alone_task(self, trajectory_id: int) -> None:
    """Distill one judged trajectory on its own (a MaTTS group that closed with one member)."""
    try:
        trajectory_distill(trajectory_id=trajectory_id)
    except LLMTransientError as exc:
        return _retry_or_give_up(self, exc, trajectory_id, "The LLM")


@shared_task(bind=True, name="trajectories.distill_group", ignore_result=True, acks_late=True)
def trajectory_group_distill_task(self, bank_id: int, group_id: str, force: bool = False) -> None:
    """Contrast-distill a MaTTS parallel group if it is complete (or ``force``)."""
    try:
        trajectory_group_distill(bank_id=bank_id, group_id=group_id, force=force)
    except LLMTransientError as exc:
        member = (
            Trajectory.objects.filter(bank_id=bank_id, group_id=group_id, status=Status.WAITING_GROUP)
            .values_list("pk", flat=True)
            .first()
        )
        return _retry_or_give_up(self, exc, member, "MaTTS contrast distillation")


@shared_task(name="trajectories.sweep", ignore_result=True, acks_late=True)
def pipeline_sweep_task() -> None:
    """Beat, every minute: re-enqueue stalled or forgotten work (see trajectories.sweeper)."""
    report = pipeline_sweep()
    if report.total:
        log.info("sweeper: %s", "; ".join(report.lines()))


@shared_task(name="trajectories.purge_steps", ignore_result=True, acks_late=True)
def trajectory_steps_purge_task() -> None:
    """Beat, hourly: apply each bank's step retention (see trajectories.retention)."""
    trajectory_steps_purge_expired()


@shared_task(bind=True, name="trajectories.experiment_run", ignore_result=True, acks_late=True)
def experiment_run_task(self, experiment_id: int) -> None:
    """Run a judge experiment's cases (trajectories.experiments); progress is on its row."""
    try:
        experiment_run(experiment_id=experiment_id)
    except LLMTransientError as exc:
        retries = self.request.retries
        if retries >= settings.RB_LLM_MAX_RETRIES:
            experiment_fail(experiment_id=experiment_id, error=f"The LLM gave up after {retries + 1} attempts: {exc}")
            return None
        raise self.retry(
            exc=exc, countdown=retry_countdown(retries, exc.retry_after), max_retries=settings.RB_LLM_MAX_RETRIES
        ) from exc
