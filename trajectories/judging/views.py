"""The judge page (session auth): the bank's own prompts and their
versions, and experiments comparing two judges."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from reasoningbank_site.errors import DomainError
from reasoningbank_site.text import prompt_version_label
from reasoningbank_site.views_helpers import post_action, redirect_after_post
from trajectories.judging.evidence import human_label_needs
from trajectories.judging.experiments import (
    arm_result,
    describe_judge,
    experiment_cases,
    experiment_for_bank,
    experiment_promote,
    experiment_start,
    experiments_for_bank,
)
from trajectories.judging.few_shot import HOLDOUT_PERCENT
from trajectories.judging.models import Experiment, ExperimentStatus, PromptName
from trajectories.judging.prompt_versions import (
    prompt_active,
    prompt_default_restore,
    prompt_diff,
    prompt_of,
    prompt_version_activate,
    prompt_version_for_bank,
    prompt_version_save,
    prompt_versions,
)
from trajectories.pipeline.llm import llm_configured
from trajectories.records.forms import ExperimentForm, PromptForm

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
        "labels": human_label_needs(bank=bank),
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
    form = PromptForm(request.POST or None, name=name, initial={"text": start_text})
    if request.method == "POST" and form.is_valid():
        try:
            version = prompt_version_save(bank=bank, name=name, author=request.user, **form.cleaned_data)
        except DomainError as exc:
            form.add_error("text", str(exc))
        else:
            label = prompt_version_label(version.version)
            if version.is_active:
                messages.success(request, f"Saved {label}: now in use.")
            else:
                messages.success(
                    request,
                    f"Saved {label} as a candidate, not in use. Compare it with the one in use in an experiment "
                    "(Judge page) before using it.",
                )
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
