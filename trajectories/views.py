"""HTML views of a bank's trajectories (session auth): the dashboard, the
trajectory list, one trajectory (with relabeling and retrying), and its steps as a
fragment for the review focus view; the impact report (does the bank help?)."""

from __future__ import annotations

import math
from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from reasoningbank_site.errors import DomainError
from reasoningbank_site.search import SearchPaginator
from reasoningbank_site.text import counted
from reasoningbank_site.views_helpers import htmx_template, post_action, redirect_after_post, reverse_each, template_for
from trajectories import lift, selectors
from trajectories.dashboard_charts import dashboard_charts
from trajectories.experiments import (
    arm_result,
    describe_judge,
    experiment_cases,
    experiment_for_bank,
    experiment_promote,
    experiment_start,
    experiments_for_bank,
)
from trajectories.few_shot import HOLDOUT_PERCENT
from trajectories.forms import ExperimentForm, PromptForm, RelabelForm, TrajectoryFilterForm
from trajectories.models import Experiment, ExperimentStatus, PromptName, Trajectory
from trajectories.pipeline.dispatch import is_parked, trajectory_retry
from trajectories.pipeline.llm import llm_configured
from trajectories.prompt_versions import (
    prompt_active,
    prompt_default_restore,
    prompt_diff,
    prompt_of,
    prompt_version_activate,
    prompt_version_for_bank,
    prompt_version_save,
    prompt_versions,
)
from trajectories.recording import deletion
from trajectories.recording.judgments import trajectory_relabel

PAGE_SIZE = 50
DETAIL_TEMPLATE = "trajectories/detail.html"


def _trajectory_or_404(bank, trajectory_id) -> Trajectory:
    try:
        return selectors.trajectory_for_bank(bank=bank, public_id=trajectory_id)
    except Trajectory.DoesNotExist:
        raise Http404("No such trajectory.") from None


@login_required
def dashboard(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    counts = selectors.status_counts(bank=bank)
    total = sum(n for _, _, n in counts)
    context = {
        "bank": bank,
        "membership": membership,
        "counts": counts,
        "total": total,
        "backlog": selectors.review_backlog(bank=bank),
        "agreement": selectors.judge_human_agreement(bank=bank),
        "min_cases": selectors.MIN_CASES,
        "agreement_by_version": selectors.judge_agreement_by_version(bank=bank),
        "distill_by_version": selectors.distill_outcomes_by_version(bank=bank),
        "activity": selectors.recent_activity(bank=bank),
        # The 5-second refresh redraws the counts only; the charts come with the whole page.
        "charts": [] if request.htmx else dashboard_charts(bank=bank),
        "llm_configured": llm_configured(),
        "api_base": request.build_absolute_uri("/api/v1/"),
    }
    return render(request, template_for(request, "trajectories/dashboard.html", {"live": "live"}), context)


@login_required
def trajectory_list(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    form = TrajectoryFilterForm(request.GET or None, agents=partial(selectors.trajectory_agents, bank=bank))
    filters = form.filters() if request.GET else {}
    page = SearchPaginator(selectors.trajectory_list(bank=bank, **filters), PAGE_SIZE).get_page(request.GET.get("page"))
    detail = reverse_each("trajectories:detail", "trajectory_id", bank_id=bank.public_id)
    for trajectory in page.object_list:
        trajectory.detail_url = detail(trajectory.public_id)
    context = {
        "bank": bank,
        "membership": membership,
        "form": form,
        "page": page,
        "filtered": any(filters.values()),
    }
    return render(request, template_for(request, "trajectories/list.html", {"trajectory-rows": "rows"}), context)


def _int_or_none(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _detail_context(bank, membership, trajectory, relabel_form=None, *, steps_query=None, embedded=False) -> dict:
    """The detail page's context. ``steps_query`` (the request's GET) picks
    the page of steps and their filter (``kind``, ``page``, or ``step``: the
    page holding that step); ``embedded`` renders the steps for the review
    focus view, opened at the first cited step."""
    items = selectors.trajectory_derived_items(trajectory=trajectory, newest_first=True)
    cited = selectors.cited_step_indexes(trajectory=trajectory, items=items)
    steps_query = steps_query or {}
    around = _int_or_none(steps_query.get("step"))
    if around is None and embedded and cited:
        around = min(cited)
    step_page = selectors.step_page(
        trajectory=trajectory,
        cited=cited,
        kind=steps_query.get("kind", ""),
        page=steps_query.get("page"),
        around=around,
    )
    kwargs = {"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}
    detail_url = reverse("trajectories:detail", kwargs=kwargs)
    return {
        "bank": bank,
        "membership": membership,
        "supported": selectors.trajectory_supported_items(trajectory=trajectory),
        "trajectory": trajectory,
        "can_write": membership.has_role(Role.REVIEWER),
        "step_page": step_page,
        "steps": step_page.page.object_list,
        # Step links open the detail page; htmx swaps the steps from where they are shown.
        "embedded": embedded,
        "steps_href": detail_url,
        "steps_hx": reverse("trajectories:steps", kwargs=kwargs) if embedded else detail_url,
        "judgments": selectors.trajectory_judgments(trajectory=trajectory),
        "items": items,
        "polling": trajectory.status in selectors.IN_FLIGHT,
        "relabel_form": relabel_form or RelabelForm(),
        "llm_configured": llm_configured(),
        "can_delete": membership.has_role(Role.ADMIN),
        "parked": is_parked(trajectory),
    }


@login_required
@require_http_methods(["GET", "POST"])
def trajectory_detail(request, bank_id, trajectory_id):
    """GET: the whole trajectory, one page of its steps (``?kind=&page=``;
    htmx targeting ``#trajectory-steps`` gets just them); ``?partial=derived``
    is the polled region (status, judgments, derived items). POST: relabel
    the verdict (reviewers)."""
    role = Role.REVIEWER if request.method == "POST" else Role.VIEWER
    bank, membership = bank_for_user(request, bank_id, role=role)
    trajectory = _trajectory_or_404(bank, trajectory_id)
    if request.method == "GET":
        context = _detail_context(bank, membership, trajectory, steps_query=request.GET)
        # The derived region polls itself with ?partial=derived while the pipeline works.
        if request.GET.get("partial") == "derived":
            template = htmx_template(request, DETAIL_TEMPLATE, "derived")
        else:
            template = template_for(request, DETAIL_TEMPLATE, {"trajectory-steps": "steps"})
        return render(request, template, context)

    form = RelabelForm(request.POST)
    if form.is_valid():
        try:
            trajectory_relabel(
                trajectory=trajectory,
                label=form.cleaned_data["label"],
                reason=form.cleaned_data["reason"],
                author=request.user,
            )
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            trajectory.refresh_from_db()
            then = (
                "its steps were purged, so nothing is distilled again"
                if trajectory.steps_purged_at
                else "new items are being distilled"
            )
            messages.success(request, f"Relabelled as {form.cleaned_data['label']}; {then}.")
            if not request.htmx:
                return redirect("trajectories:detail", bank_id=bank.public_id, trajectory_id=trajectory.public_id)
            form = None
    trajectory.refresh_from_db()
    context = _detail_context(bank, membership, trajectory, relabel_form=form)
    # An invalid form answers 200 so htmx swaps it in with its errors.
    return render(request, htmx_template(request, DETAIL_TEMPLATE, "derived"), context)


@login_required
@post_action
def trajectory_delete(request, bank_id, trajectory_id):
    """Delete a trajectory (admins and owners: it cannot be undone). A POST
    without ``confirm=1`` answers the confirmation page; with it, deletes
    through the one service (audited) and goes back to the list."""
    bank, membership = bank_for_user(request, bank_id, role=Role.ADMIN)
    trajectory = _trajectory_or_404(bank, trajectory_id)
    error = ""
    if request.POST.get("confirm") == "1":
        try:
            deleted = deletion.trajectory_delete(trajectory=trajectory, user=request.user)
        except DomainError as exc:
            error = exc.message
        else:
            kept = (
                f" {counted(deleted.items_kept, 'memory item')} distilled from it {'stays' if deleted.items_kept == 1 else 'stay'}."
                if deleted.items_kept
                else ""
            )
            messages.success(request, f"Trajectory {deleted.public_id} deleted.{kept}")
            return redirect_after_post(request, reverse("trajectories:list", kwargs={"bank_id": bank.public_id}))
    context = {
        "bank": bank,
        "membership": membership,
        "trajectory": trajectory,
        "items": selectors.trajectory_derived_items(trajectory=trajectory),
        "judgments": trajectory.judgments.count(),
        "busy": trajectory.status in deletion.BUSY,
        "error": error,
    }
    return render(request, "trajectories/delete_confirm.html", context, status=409 if error else 200)


@login_required
@post_action
def trajectory_retry_view(request, bank_id, trajectory_id):
    """Resume a trajectory parked after temporary LLM errors now (reviewers)."""
    bank, _membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    trajectory = _trajectory_or_404(bank, trajectory_id)
    try:
        trajectory_retry(trajectory=trajectory, author=request.user)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Retrying now: the LLM pipeline has it again.")
    return redirect_after_post(
        request,
        reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}),
    )


@login_required
def trajectory_steps(request, bank_id, trajectory_id):
    """The steps of one trajectory as a fragment (the review focus view loads
    it beside the item, at the page of the first cited step unless ``?page=``
    says otherwise); without htmx, the full trajectory page."""
    bank, membership = bank_for_user(request, bank_id)
    trajectory = _trajectory_or_404(bank, trajectory_id)
    if not request.htmx:
        url = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
        return redirect(f"{url}?{request.GET.urlencode()}" if request.GET else url)
    context = _detail_context(bank, membership, trajectory, steps_query=request.GET, embedded=True)
    return render(request, DETAIL_TEMPLATE + "#steps", context)


@login_required
def trajectory_group(request, bank_id, trajectory_id):
    """The MaTTS group of one trajectory: its rollouts side by side (verdict,
    steps, final answer, key steps) and the contrast items distilled from
    them. A trajectory in no group: its own page."""
    bank, membership = bank_for_user(request, bank_id)
    trajectory = _trajectory_or_404(bank, trajectory_id)
    if not trajectory.group_id:
        return redirect("trajectories:detail", bank_id=bank.public_id, trajectory_id=trajectory.public_id)
    context = {
        "bank": bank,
        "membership": membership,
        "trajectory": trajectory,
        "group": selectors.trajectory_group(bank=bank, group_id=trajectory.group_id),
        "shown_max": selectors.GROUP_SHOWN,
    }
    return render(request, "trajectories/group.html", context)


IMPACT_WINDOWS = [("7", "Last 7 days"), ("30", "Last 30 days"), ("90", "Last 90 days"), ("all", "All time")]


def _difference_bar(difference) -> dict | None:
    """Where to draw the always-valid interval (the verdict's) on a bar
    centred on zero: percentages of its width, on a symmetric scale that fits
    the interval (at least ±10 points)."""
    if difference is None:
        return None
    scale = max(0.1, abs(difference.cs_low), abs(difference.cs_high))
    scale = min(1.0, math.ceil(scale * 10) / 10)

    def at(value: float) -> float:
        return round(50 + 50 * value / scale, 2)

    return {
        "left": at(difference.cs_low),
        "width": round(at(difference.cs_high) - at(difference.cs_low), 2),
        "point": at(difference.estimate),
        "scale": round(scale * 100),
    }


@login_required
def impact(request, bank_id):
    """Does the bank help? Treatment vs holdout success rates, their
    difference with an interval, a verdict, and per-item outcomes
    (trajectories.lift). ``?days=7|30|90|all`` picks the window."""
    bank, membership = bank_for_user(request, bank_id)
    window = request.GET.get("days", "all")
    if window not in lift.WINDOWS:
        window = "all"
    days = lift.WINDOWS[window]
    since = lift.window_start(days)
    report = lift.bank_lift(bank=bank, since=since)
    context = {
        "bank": bank,
        "membership": membership,
        "report": report,
        "window": window,
        "windows": IMPACT_WINDOWS,
        "items": lift.item_outcomes(bank=bank, since=since, lift=report),
        "arm_rows": [
            (report.treatment, "treatment", ("Treatment", "memories served")),
            *([(report.holdout, "holdout", ("Holdout", "memories withheld"))] if report.holdout_configured else []),
        ],
        "bar": _difference_bar(report.difference),
        "min_item_judged": lift.MIN_ITEM_JUDGED,
        "api_base": request.build_absolute_uri("/api/v1/"),
    }
    return render(request, "trajectories/impact.html", context)


# ---------------------------------------------------------------------------
# The judge page: the bank's own prompts and experiments
# ---------------------------------------------------------------------------

JUDGE_TEMPLATE = "trajectories/judge.html"


def _prompt_name_or_404(name: str) -> str:
    if name not in PromptName.values:
        raise Http404("No such prompt.")
    return name


def _experiment_or_404(bank, experiment_id) -> Experiment:
    found = experiment_for_bank(bank=bank, public_id=experiment_id)
    if found is None:
        raise Http404("No such experiment.")
    return found


def _experiment_view(experiment: Experiment) -> dict:
    cases = experiment.cases or {}
    return {
        "e": experiment,
        "baseline": arm_result(cases, "baseline"),
        "candidate": arm_result(cases, "candidate"),
        "baseline_label": describe_judge(
            experiment.baseline_prompt, experiment.baseline_model, experiment.baseline_few_shot
        ),
        "candidate_label": describe_judge(
            experiment.candidate_prompt, experiment.candidate_model, experiment.candidate_few_shot
        ),
        "polling": experiment.status in (ExperimentStatus.QUEUED, ExperimentStatus.RUNNING),
        "percent": round(100 * experiment.done / experiment.total) if experiment.total else 0,
    }


@login_required
@require_http_methods(["GET", "POST"])
def judge(request, bank_id):
    """GET: the bank's prompts (which version each uses) and its experiments.
    POST: start an experiment (admins)."""
    role = Role.ADMIN if request.method == "POST" else Role.VIEWER
    bank, membership = bank_for_user(request, bank_id, role=role)
    form = ExperimentForm(request.POST or None, bank=bank)
    if request.method == "POST" and form.is_valid():
        try:
            experiment_start(bank=bank, author=request.user, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Experiment started: both judges read the held-out cases in the background.")
            return redirect("trajectories:judge", bank_id=bank.public_id)
    context = {
        "bank": bank,
        "membership": membership,
        "can_admin": membership.has_role(Role.ADMIN),
        "prompts": [(name, label, prompt_active(bank=bank, name=name)) for name, label in PromptName.choices],
        "form": form,
        "cases": len(experiment_cases(bank=bank)),
        "holdout_percent": HOLDOUT_PERCENT,
        "experiments": [_experiment_view(e) for e in experiments_for_bank(bank=bank)],
        "llm_configured": llm_configured(),
    }
    return render(request, JUDGE_TEMPLATE, context)


@login_required
def experiment_detail(request, bank_id, experiment_id):
    """One experiment's row: the region htmx polls while it runs."""
    bank, membership = bank_for_user(request, bank_id)
    experiment = _experiment_or_404(bank, experiment_id)
    if not request.htmx:
        return redirect("trajectories:judge", bank_id=bank.public_id)
    context = {"bank": bank, "can_admin": membership.has_role(Role.ADMIN), "x": _experiment_view(experiment)}
    return render(request, JUDGE_TEMPLATE + "#experiment", context)


@login_required
@post_action
def experiment_promote_view(request, bank_id, experiment_id):
    bank, _membership = bank_for_user(request, bank_id, role=Role.ADMIN)
    experiment = _experiment_or_404(bank, experiment_id)
    try:
        experiment_promote(experiment=experiment, author=request.user)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Promoted: new trajectories are judged by the candidate.")
    return redirect_after_post(request, reverse("trajectories:judge", kwargs={"bank_id": bank.public_id}))


@login_required
@require_http_methods(["GET", "POST"])
def prompt_edit(request, bank_id, name):
    """GET: the prompt in use, its diff against the default, its versions.
    POST: save a new version (admins); invalid text re-renders with errors."""
    name = _prompt_name_or_404(name)
    role = Role.ADMIN if request.method == "POST" else Role.VIEWER
    bank, membership = bank_for_user(request, bank_id, role=role)
    active = prompt_active(bank=bank, name=name)
    # ?from=<version id> starts the editor from a saved version (e.g. a candidate) instead of the one in use.
    start = prompt_version_for_bank(bank=bank, name=name, public_id=request.GET.get("from", "")) or active.custom
    start_text = start.text if start is not None else active.text
    form = PromptForm(request.POST or None, name=name, initial={"text": start_text, "activate": True})
    if request.method == "POST" and form.is_valid():
        try:
            version = prompt_version_save(bank=bank, name=name, author=request.user, **form.cleaned_data)
        except DomainError as exc:
            form.add_error("text", str(exc))
        else:
            state = "now in use" if version.is_active else "saved as a candidate"
            messages.success(request, f"Saved {version.version}: {state}.")
            url = reverse("trajectories:prompt_edit", kwargs={"bank_id": bank.public_id, "name": name})
            return redirect(f"{url}?from={version.public_id}")
    shown = form["text"].value() or start_text
    context = {
        "bank": bank,
        "membership": membership,
        "can_admin": membership.has_role(Role.ADMIN),
        "name": name,
        "label": PromptName(name).label,
        "active": active,
        "form": form,
        "diff": prompt_diff(name=name, text=shown),
        "versions": prompt_versions(bank=bank, name=name),
        "default_version": prompt_of(name=name, version=None).version,
        "editing": start,
    }
    return render(request, "trajectories/prompt_edit.html", context)


@login_required
@post_action
def prompt_activate(request, bank_id, name, version_id):
    """Use a saved version (``version_id``), or the default file (``default``)."""
    name = _prompt_name_or_404(name)
    bank, _membership = bank_for_user(request, bank_id, role=Role.ADMIN)
    if version_id == "default":
        prompt_default_restore(bank=bank, name=name, author=request.user)
        messages.success(request, "The default prompt is in use again.")
    else:
        version = prompt_version_for_bank(bank=bank, name=name, public_id=version_id)
        if version is None:
            raise Http404("No such version.")
        prompt_version_activate(version=version, author=request.user)
        messages.success(request, f"{version.version} is in use.")
    return redirect_after_post(
        request, reverse("trajectories:prompt_edit", kwargs={"bank_id": bank.public_id, "name": name})
    )
