"""Celery adapters of evaluation runs (registered by trajectories.tasks, which Celery autodiscovers)."""

from __future__ import annotations

from celery import shared_task

from reasoningbank_site.celery import db_outage_retry
from trajectories.evaluation.models import EvalRun
from trajectories.evaluation.refresh import REFRESH_TASK
from trajectories.evaluation.verdicts import run_results_refresh


@shared_task(name=REFRESH_TASK, ignore_result=True, acks_late=True, **db_outage_retry())
def evaluation_results_refresh_task(run_id: int) -> None:
    """Compute a run's results from its tries (trajectories.evaluation.verdicts); a deleted run is skipped."""
    run = EvalRun.objects.select_related("bank", "task_set").filter(pk=run_id).first()
    if run is not None:
        run_results_refresh(run)
