"""When an evaluation run's results must be computed again: a try's outcome became known (its check,
the agent's trusted word, the LLM judge or a reviewer's relabel) or the run ended. A worker computes
them (``evaluation.results_refresh``, trajectories.evaluation.tasks) once the change commits, so
neither the harness's requests nor the judge wait for the statistics."""

from __future__ import annotations

from reasoningbank_site.celery import enqueue_on_commit
from trajectories.evaluation.models import EvalAttempt

REFRESH_TASK = "evaluation.results_refresh"


def evaluation_results_refresh_later(*, run_ids: list[int]) -> None:
    """Compute the results of the runs ``run_ids`` again after the current transaction commits."""
    for run_id in sorted(set(run_ids)):
        enqueue_on_commit(REFRESH_TASK, run_id)


def evaluation_verdict_changed(*, trajectory_id: int) -> None:
    """A verdict of the evaluation try ``trajectory_id`` changed: its run's results are refreshed."""
    runs = EvalAttempt.objects.filter(trajectory_id=trajectory_id).values_list("run_id", flat=True)
    evaluation_results_refresh_later(run_ids=list(runs))
