"""The evaluation pages (session auth): a bank's evaluation runs with the form that starts one, a run's page
(progress, polled while tries come in; the command that runs or resumes it; the per-arm table, the
comparisons with their verdicts and flipped tasks, the charts) and one task's tries in a run.

The runs themselves are trajectories.evaluation.runs' (create, progress, cancel) and attempts' (a try's
outcome); the numbers are trajectories.evaluation.verdicts'."""

from __future__ import annotations

import json
import zlib

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.releases.selectors import releases_list
from reasoningbank_site.errors import DomainError, Invalid
from reasoningbank_site.views_helpers import template_for
from trajectories.evaluation import charts
from trajectories.evaluation.attempts import try_outcome
from trajectories.evaluation.forms import RunCreateForm
from trajectories.evaluation.models import TASK_KEY_MAX, ArmKind, EvalArm, EvalAttempt, EvalRun, EvalTask, RunState
from trajectories.evaluation.runs import evaluation_cancel, evaluation_command, evaluation_create, evaluation_progress
from trajectories.evaluation.verdicts import run_results_refresh

RUN_TEMPLATE = "evaluation/run_detail.html"
LIST_LIMIT = 100
RELEASE_CHOICES = 50
VERDICT_LABELS = {
    "better": "better",
    "worse": "worse",
    "no_difference": "no difference shown",
    "not_enough": "not enough known outcomes yet",
}


def _run(bank, evaluation_id) -> EvalRun:
    """Run ``evaluation_id`` of ``bank`` with its task set and its arms' pinned releases, else 404."""
    arms = Prefetch("arms", queryset=EvalArm.objects.select_related("release"))
    return get_object_or_404(
        EvalRun.objects.select_related("task_set").prefetch_related(arms), bank=bank, public_id=evaluation_id
    )


@login_required
@require_http_methods(["GET", "POST"])
def evaluations(request, bank_id):
    """GET: the bank's evaluation runs and, for reviewers, the form that starts one. POST (reviewers):
    start a run; a refusal (an unknown release, k out of range…) re-renders the form with its message."""
    bank, me = bank_for_user(request, bank_id)
    can_run = me.has_role(Role.REVIEWER)
    if request.method == "POST" and not can_run:
        raise PermissionDenied("Only reviewers and above start evaluation runs.")
    releases = releases_list(bank=bank, limit=RELEASE_CHOICES)
    form = RunCreateForm(request.POST if request.method == "POST" else None, bank=bank, releases=releases)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = evaluation_create(
                bank=bank,
                task_set=data["task_set"],
                arms=list(data["arms"]),
                release=data["release"] if ArmKind.CANDIDATE in data["arms"] else None,
                k=data["k"],
                token_budget=data["token_budget"],
                note=data["note"],
                actor=request.user,
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Evaluation started: run its tries with {evaluation_command(run)}")
            return redirect("trajectories:evaluation_detail", bank_id=bank.public_id, evaluation_id=run.public_id)
    arms = Prefetch("arms", queryset=EvalArm.objects.select_related("release"))
    runs = EvalRun.objects.filter(bank=bank).select_related("task_set").prefetch_related(arms)[:LIST_LIMIT]
    context = {
        "bank": bank,
        "runs": [(run, _list_verdict(run)) for run in runs],
        "form": form,
        "can_run": can_run,
        "has_task_sets": form.fields["task_set"].queryset.exists(),
        "list_limit": LIST_LIMIT,
    }
    return render(request, "evaluation/runs.html", context)


def _list_verdict(run: EvalRun) -> str:
    verdict = (run.results or {}).get("verdict", {}).get("at_actual_cost", "")
    return VERDICT_LABELS.get(verdict, "")


def _fraction(value) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def _number(value, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def arm_rows(run: EvalRun, results: dict) -> list[dict]:
    """One row per arm of ``run`` (its pinned release) with its results, formatted for the table."""
    stats_by_arm, k = results.get("arms", {}), str(run.k)
    rows = []
    for arm in run.arms.all():
        s = stats_by_arm.get(arm.kind) or {}
        cost = s.get("cost_per_try")
        rows.append(
            {
                "kind": arm.kind,
                "label": ArmKind(arm.kind).label,
                "release": arm.release,
                "tries": f"{s.get('known', 0)} of {s.get('tries', 0)}" if s else "—",
                "success": _fraction(s.get("success_rate")),
                "pass_hat_k": _fraction(s.get("pass_hat_k", {}).get(k)),
                "pass_at_k": _fraction(s.get("pass_at_k", {}).get(k)),
                "steps": _number(s.get("mean_steps"), 1),
                "tokens": _number(s.get("tokens_per_try")),
                "memory_tokens": _number(s.get("memory_tokens")),
                "cost": "unknown" if cost is None else f"${cost:.4f}",
                "per_1k": _number(s.get("success_per_1k_tokens"), 3),
                "sd": "—" if s.get("run_to_run_sd") is None else f"{s['run_to_run_sd'] * 100:.1f} pts",
            }
        )
    return rows


def _p_text(p_value) -> str:
    if p_value is None:
        return ""
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.3f}"


def comparison_rows(results: dict) -> list[dict]:
    """The comparisons of the results, each with its verdict's words and its per-task chart."""
    rows = []
    for c in results.get("comparisons", []):
        low, high = (c.get("interval") or [None, None])[:2]
        rows.append(
            {
                **c,
                "arm_label": ArmKind(c["arm"]).label if c["arm"] in ArmKind.values else c["arm"],
                "versus_label": ArmKind(c["versus"]).label if c["versus"] in ArmKind.values else c["versus"],
                "verdict_text": VERDICT_LABELS.get(c.get("verdict"), c.get("verdict", "")),
                "p_text": _p_text(c.get("p_value")),
                "difference_pts": None if c.get("difference") is None else c["difference"] * 100,
                "low_pts": None if low is None else low * 100,
                "high_pts": None if high is None else high * 100,
                "chart": charts.paired_chart(results, arm=c["arm"], versus=c["versus"]),
            }
        )
    return rows


def _signature(run: EvalRun, progress: dict) -> str:
    """What the live region shows changes only when this does: the run's state, its tries' counts, whether
    it is abandoned, and its stored results (a corrected verdict changes them without changing a count)."""
    stored = zlib.crc32(json.dumps(run.results or {}, sort_keys=True).encode())
    counts = ":".join(str(progress.get(key)) for key in ("recorded", "claimed", "pending", "known", "abandoned"))
    return f"{run.state}:{counts}:{stored:x}"


def _results(run: EvalRun) -> dict:
    """The run's results: computed afresh while tries or outcomes may still change, else as stored."""
    if run.state == RunState.OPEN or not (run.results or {}).get("complete"):
        return run_results_refresh(run) or {}
    return run.results


@login_required
@require_http_methods(["GET", "POST"])
def evaluation_detail(request, bank_id, evaluation_id):
    """GET: the run's page; an htmx poll of ``#evaluation-live`` gets that region alone. POST
    ``action=cancel`` (reviewers): cancel the run; the tries recorded so far stay."""
    bank, me = bank_for_user(request, bank_id)
    run = _run(bank, evaluation_id)

    if request.method == "POST":
        if not me.has_role(Role.REVIEWER):
            raise PermissionDenied("Only reviewers and above cancel evaluation runs.")
        try:
            if request.POST.get("action") != "cancel":
                raise Invalid(f"Unknown action {request.POST.get('action', '')[:40]!r}.")
            evaluation_cancel(run=run, actor=request.user)
        except DomainError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, "Evaluation cancelled: the tries recorded so far are kept.")
        return redirect("trajectories:evaluation_detail", bank_id=bank.public_id, evaluation_id=run.public_id)
    progress = evaluation_progress(run)
    if request.htmx and request.GET.get("since") == _signature(run, progress):
        return HttpResponse(status=204)  # nothing changed since the last poll: htmx keeps the region (and open details)
    results = _results(run)
    complete = bool(results.get("complete"))
    context = {
        "signature": _signature(run, progress),  # after the refresh, which may have stored new results
        "bank": bank,
        "run": run,
        "progress": progress,
        "results": results,
        "complete": complete,
        "polling": (run.state == RunState.OPEN and not progress.get("abandoned"))
        or (run.state == RunState.FINISHED and not complete),
        "command": evaluation_command(run),
        "site_url": request.build_absolute_uri("/").rstrip("/"),
        "can_review": me.has_role(Role.REVIEWER),
        "arm_rows": arm_rows(run, results),
        "comparisons": comparison_rows(results),
        "verdict": results.get("verdict") or {},
        "verdict_words": {
            "actual": VERDICT_LABELS.get((results.get("verdict") or {}).get("at_actual_cost"), ""),
            "equal": VERDICT_LABELS.get((results.get("verdict") or {}).get("at_equal_cost"), ""),
        },
        "gate": results.get("gate") or {},
        "pass_k_chart": charts.pass_k_chart(results) if results.get("arms") else None,
        "cost_chart": charts.cost_chart(results) if results.get("arms") else None,
    }
    if not request.htmx:
        context["history_chart"] = charts.history_chart(runs=charts.history_runs(bank=bank))
    return render(request, template_for(request, RUN_TEMPLATE, {"evaluation-live": "live"}), context)


@login_required
@require_GET
def evaluation_task(request, bank_id, evaluation_id, task_key):
    """One task of a run: its text and check, and each try per arm with its outcome and trajectory."""
    bank, _ = bank_for_user(request, bank_id)
    run = _run(bank, evaluation_id)
    if "\x00" in task_key or len(task_key) > TASK_KEY_MAX:  # no task has such a key (PostgreSQL refuses NUL)
        raise Http404("No such task in this run.")
    task = get_object_or_404(EvalTask.objects.select_related("trajectory"), task_set_id=run.task_set_id, key=task_key)

    tries = (
        EvalAttempt.objects.filter(run=run, task=task)
        .select_related("arm__release", "trajectory")
        .order_by("arm__position", "arm_id", "number")
    )
    context = {
        "bank": bank,
        "run": run,
        "task": task,
        "tries": [(attempt, try_outcome(attempt)) for attempt in tries],
    }
    return render(request, "evaluation/run_task.html", context)
