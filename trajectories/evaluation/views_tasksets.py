"""The task-set pages of a bank (session auth): the list with its two ways to make a set (a trajectory
filter, previewed before saving, or a JSONL upload), and one set with its tasks. Every member reads
them; reviewers and up create and delete."""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from reasoningbank_site.errors import DomainError, NotFound
from reasoningbank_site.views_helpers import post_action, redirect_after_post, reverse_each
from trajectories.evaluation import tasksets
from trajectories.evaluation.forms_tasksets import TaskSetFilterForm, TaskSetUploadForm
from trajectories.evaluation.models import TaskSet
from trajectories.records.selectors import trajectory_agents

LIST_TEMPLATE = "evaluation/task_sets.html"
DETAIL_TEMPLATE = "evaluation/task_set_detail.html"
PREVIEW_SHOWN = 5  # task texts the preview lists
TASKS_PAGE = 100
UPLOAD_PREFIX = "upload"


def _preview(bank, form: TaskSetFilterForm) -> dict:
    """How many tasks the filter selects now (and the first few), or why it cannot say."""
    form.is_valid()
    if set(form.errors) - {"name", "description"}:  # a set need not be named to be previewed
        return {"error": "Fix the filter to see what it selects."}
    try:
        candidates = tasksets.task_set_candidates(bank=bank, filters=tasksets.task_set_filters_clean(form.filters()))
    except DomainError as exc:
        return {"error": exc.message}
    return {"count": len(candidates), "first": [c.text for c in candidates[:PREVIEW_SHOWN]]}


@login_required
@require_http_methods(["GET", "POST"])
def task_sets(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    can_edit = membership.has_role(Role.REVIEWER)
    agents = partial(trajectory_agents, bank=bank)
    action = request.POST.get("action", "") if request.method == "POST" else ""
    if request.method == "POST" and not can_edit:
        raise PermissionDenied("Making task sets needs the reviewer role.")
    wants_preview = action == "preview" or (request.method == "GET" and "preview" in request.GET)
    data = request.POST if action in ("create", "preview") else (request.GET if wants_preview else None)
    form = TaskSetFilterForm(data, agents=agents)
    upload = TaskSetUploadForm(
        request.POST if action == "upload" else None, request.FILES or None, prefix=UPLOAD_PREFIX
    )
    preview, upload_errors = None, []
    if wants_preview and can_edit:
        preview = _preview(bank, form)
        if request.htmx and request.htmx.target == "task-set-preview":
            return render(request, f"{LIST_TEMPLATE}#preview", {"preview": preview})
    elif action == "create" and form.is_valid():
        try:
            task_set = tasksets.task_set_from_trajectories(
                bank=bank,
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                filters=form.filters(),
                actor=request.user,
            )
        except DomainError as exc:
            form.add_error("name" if exc.code == "name_taken" else None, exc.message)
        else:
            return _created(request, bank, task_set)
    elif action == "upload" and upload.is_valid():
        try:
            task_set = tasksets.task_set_upload(
                bank=bank,
                name=upload.cleaned_data["name"],
                description=upload.cleaned_data["description"],
                body=upload.cleaned_data["file"],
                actor=request.user,
            )
        except DomainError as exc:
            upload_errors = exc.details.get("errors") or []
            if not upload_errors:
                upload.add_error("name" if exc.code == "name_taken" else "file", exc.message)
        else:
            return _created(request, bank, task_set)
    sets = list(
        TaskSet.objects.filter(bank=bank)
        .select_related("created_by")
        .annotate(run_count=Count("runs"))
        .order_by("-created_at")
    )
    detail = reverse_each("trajectories:task_set_detail", "task_set_id", bank_id=bank.public_id)
    for task_set in sets:
        task_set.detail_url = detail(task_set.public_id)
    context = {
        "bank": bank,
        "membership": membership,
        "can_edit": can_edit,
        "task_sets": sets,
        "form": form,
        "upload": upload,
        "upload_errors": upload_errors,
        "preview": preview,
        "opened": action or ("preview" if wants_preview else ""),
    }
    return render(request, LIST_TEMPLATE, context)


def _created(request, bank, task_set: TaskSet):
    messages.success(request, f"Task set “{task_set.name}” saved with {task_set.task_count} tasks.")
    return redirect_after_post(request, detail_url(bank, task_set))


def detail_url(bank, task_set: TaskSet) -> str:
    return reverse(
        "trajectories:task_set_detail", kwargs={"bank_id": bank.public_id, "task_set_id": task_set.public_id}
    )


def _task_set_or_404(bank, task_set_id) -> TaskSet:
    try:
        return tasksets.task_set_lookup(bank=bank, ref=str(task_set_id))
    except NotFound:
        raise Http404("No such task set.") from None


@login_required
@require_http_methods(["GET"])
def task_set_detail(request, bank_id, task_set_id):
    bank, membership = bank_for_user(request, bank_id)
    task_set = _task_set_or_404(bank, task_set_id)
    tasks = task_set.tasks.select_related("trajectory").only(
        "key", "text", "success_check", "task_id", "metadata", "position", "trajectory__public_id"
    )
    page = Paginator(tasks, TASKS_PAGE).get_page(request.GET.get("page"))
    source = reverse_each("trajectories:detail", "trajectory_id", bank_id=bank.public_id)
    for task in page.object_list:
        task.source_url = source(task.trajectory.public_id) if task.trajectory_id else ""
    context = {
        "bank": bank,
        "membership": membership,
        "can_edit": membership.has_role(Role.REVIEWER),
        "task_set": task_set,
        "page": page,
        "run_count": task_set.runs.count(),
        "filters": task_set.filters,
    }
    return render(request, DETAIL_TEMPLATE, context)


@login_required
@post_action
def task_set_delete(request, bank_id, task_set_id):
    bank, _membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    task_set = _task_set_or_404(bank, task_set_id)
    try:
        tasksets.task_set_delete(task_set=task_set, actor=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect_after_post(request, detail_url(bank, task_set))
    messages.success(request, f"Task set “{task_set.name}” deleted.")
    return redirect("trajectories:task_sets", bank_id=bank.public_id)
