"""What the release pages show of each release's evaluations: the state under the bank's gate
(under way with its tries, passed, failed, cancelled), the verdicts against production and the
same-budget control, and a link to the run's page."""

from __future__ import annotations

from collections import defaultdict

from django.urls import NoReverseMatch, reverse

from memories.releases.gate import evaluation_state
from memories.releases.models import Release, ReleaseEvaluation
from trajectories.evaluation.models import EvalRun, RunState

VERDICT_TEXT = {
    "better": "better",
    "worse": "worse",
    "no_difference": "no difference shown",
    "not_enough": "not enough",
}
STATE_TEXT = {"under_way": "under way", "passed": "passed", "failed": "failed", "cancelled": "cancelled"}


def _url(name: str, *args) -> str:
    """The page ``name`` (its URL, or "" while the evaluation pages are not wired)."""
    try:
        return reverse(f"trajectories:{name}", args=args)
    except NoReverseMatch:
        return ""


def evaluations_url(bank) -> str:
    """The bank's evaluations page, else its releases page."""
    return _url("evaluations", bank.public_id) or reverse("trajectories:releases", args=[bank.public_id])


def release_evaluations_attach(*, bank, releases, gate: str) -> list[Release]:
    """``releases`` as a list, each with ``evaluation_rows`` (newest first): dicts with ``run``, ``state``,
    ``state_text``, ``recorded``/``total`` tries, ``versus_production``/``versus_control`` (in words, ""
    when not compared), ``summary`` and ``url`` (the run's page, "" if not wired). Two queries."""
    releases = list(releases)
    evaluations = list(ReleaseEvaluation.objects.filter(release__in=releases).order_by("-created_at", "-pk"))
    runs = {
        run.public_id: run
        for run in EvalRun.objects.filter(bank_id=bank.pk, public_id__in=[e.run for e in evaluations]).only(
            "public_id", "state", "tries_recorded", "tries_total"
        )
    }
    rows = defaultdict(list)
    for e in evaluations:
        run = runs.get(e.run)
        state = evaluation_state(e, gate)
        if state == "under_way" and run is not None and run.state == RunState.CANCELLED:
            state = "cancelled"
        rows[e.release_id].append(
            {
                "run": e.run,
                "state": state,
                "state_text": STATE_TEXT[state],
                "recorded": run.tries_recorded if run else None,
                "total": run.tries_total if run else None,
                "versus_production": VERDICT_TEXT.get(e.versus_production, ""),
                "versus_control": VERDICT_TEXT.get(e.versus_control, ""),
                "summary": e.summary,
                "url": _url("evaluation_detail", bank.public_id, e.run),
            }
        )
    for release in releases:
        release.evaluation_rows = rows.get(release.pk, [])
    return releases
