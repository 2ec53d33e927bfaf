"""An evaluation run's results, from its tries (statistics in trajectories.evaluation.statistics)."""

from __future__ import annotations

from trajectories.evaluation.models import EvalRun


def run_results_refresh(run: EvalRun) -> dict:
    """Compute ``run``'s results from its tries, store them on the run and, once every outcome is
    known, on its candidate release's ReleaseEvaluation. Returns the results."""
    return {}  # placeholder until the statistics land; nothing reads it yet
