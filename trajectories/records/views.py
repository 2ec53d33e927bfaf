"""HTML views of a bank's trajectories (session auth): the list, one
trajectory (with relabeling, retrying and deleting), its steps as a fragment
for the review focus view, and its MaTTS group."""

from __future__ import annotations

from collections import Counter
from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.serving.retrieval import run_retrievals
from reasoningbank_site.errors import DomainError
from reasoningbank_site.search_paging import SearchPaginator
from reasoningbank_site.text import counted
from reasoningbank_site.views_helpers import htmx_template, post_action, redirect_after_post, reverse_each, template_for
from trajectories.dashboard.llm_usage import trajectory_llm_usage
from trajectories.judging.verdicts import trajectory_relabel
from trajectories.models import Trajectory
from trajectories.pipeline.dispatch import is_parked, trajectory_retry
from trajectories.pipeline.llm import llm_configured
from trajectories.records import deletion, steps
from trajectories.records import selectors as records
from trajectories.records.forms import RelabelForm, TrajectoryFilterForm

PAGE_SIZE = 50
DETAIL_TEMPLATE = "trajectories/detail.html"


def _trajectory_or_404(bank, trajectory_id) -> Trajectory:
    try:
        return records.trajectory_for_bank(bank=bank, public_id=trajectory_id)
    except Trajectory.DoesNotExist:
        raise Http404("No such trajectory.") from None


@login_required
def trajectory_list(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    form = TrajectoryFilterForm(request.GET or None, agents=partial(records.trajectory_agents, bank=bank))
    filters = form.filters() if request.GET else {}
    page = SearchPaginator(records.trajectory_list(bank=bank, **filters), PAGE_SIZE).get_page(request.GET.get("page"))
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
    items = records.trajectory_derived_items(trajectory=trajectory, newest_first=True)
    cited = records.cited_step_indexes(trajectory=trajectory, items=items)
    steps_query = steps_query or {}
    around = _int_or_none(steps_query.get("step"))
    if around is None and embedded and cited:
        around = min(cited)
    step_page = steps.step_page(
        trajectory=trajectory,
        cited=cited,
        kind=steps_query.get("kind", ""),
        page=steps_query.get("page"),
        around=around,
    )
    kwargs = {"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}
    detail_url = reverse("trajectories:detail", kwargs=kwargs)
    llm_lines, llm_total = trajectory_llm_usage(trajectory=trajectory)
    return {
        "bank": bank,
        "membership": membership,
        "supported": records.trajectory_supported_items(trajectory=trajectory),
        "trajectory": trajectory,
        "can_write": membership.has_role(Role.REVIEWER),
        "step_page": step_page,
        "steps": step_page.page.object_list,
        # Step links open the detail page; htmx swaps the steps from where they are shown.
        "embedded": embedded,
        "steps_href": detail_url,
        "steps_hx": reverse("trajectories:steps", kwargs=kwargs) if embedded else detail_url,
        "judgments": records.trajectory_judgments(trajectory=trajectory),
        "items": items,
        "items_now": sorted(Counter(item.get_status_display().lower() for item in items).items()),
        "polling": trajectory.status in records.IN_FLIGHT,
        "relabel_form": relabel_form or RelabelForm(),
        "llm_configured": llm_configured(),
        "can_delete": membership.has_role(Role.ADMIN),
        "parked": is_parked(trajectory),
        "llm_lines": llm_lines,
        "run_retrievals": run_retrievals(first_id=trajectory.retrieval_id),
        "llm_total": llm_total,
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
                if trajectory.steps_purged
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
        "items": records.trajectory_derived_items(trajectory=trajectory),
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
        "group": steps.trajectory_group(bank=bank, group_id=trajectory.group_id),
        "shown_max": steps.GROUP_SHOWN,
    }
    return render(request, "trajectories/group.html", context)
