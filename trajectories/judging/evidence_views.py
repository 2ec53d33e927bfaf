"""The evidence panel of the review focus view: the source trajectory's task,
verdict (and what set it), the judge's rationale, the outcome the agent
claimed, its final answer and steps (cited ones marked) — and the two
one-key answers to the verdict: agree with it (``y``) or relabel it (``n``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from reasoningbank_site.errors import DomainError
from trajectories.judging.evidence import trajectory_evidence
from trajectories.judging.verdicts import trajectory_relabel
from trajectories.records.forms import RelabelForm
from trajectories.records.views import _detail_context, _trajectory_or_404

TEMPLATE = "trajectories/evidence.html"


def _context(request, bank, membership, trajectory, *, form=None, note="", error="") -> dict:
    context = _detail_context(bank, membership, trajectory, relabel_form=form, steps_query=request.GET, embedded=True)
    context.update(
        evidence=trajectory_evidence(trajectory=trajectory),
        evidence_url=reverse(
            "trajectories:evidence", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}
        ),
        note=note,
        error=error,
    )
    return context


@login_required
@require_http_methods(["GET", "POST"])
def trajectory_evidence_view(request, bank_id, trajectory_id):
    """GET (htmx): the panel. POST (reviewers): ``action=agree`` records a
    human label equal to the verdict, no reason needed; otherwise a relabel
    with ``label`` and an optional ``reason``. Without htmx: the trajectory page."""
    role = Role.REVIEWER if request.method == "POST" else Role.VIEWER
    bank, membership = bank_for_user(request, bank_id, role=role)
    trajectory = _trajectory_or_404(bank, trajectory_id)
    detail = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
    if request.method == "GET":
        if not request.htmx:
            return redirect(detail)
        return render(request, TEMPLATE, _context(request, bank, membership, trajectory))
    form, note, error = None, "", ""
    if request.POST.get("action") == "agree":
        if not trajectory.verdict:
            error = "There is no verdict to agree with yet: pick a label instead."
        else:
            label, reason = trajectory.verdict, ""
    else:
        form = RelabelForm(request.POST)
        if form.is_valid():
            label, reason = form.cleaned_data["label"], form.cleaned_data["reason"]
        else:
            error = "Pick success or failure."
    if not error:
        old = trajectory.verdict
        try:
            trajectory_relabel(trajectory=trajectory, label=label, reason=reason, author=request.user)
        except DomainError as exc:
            error = str(exc)
        else:
            form = None
            note = (
                f"Your label ({label}) is recorded: you agree with the verdict."
                if label == old
                else f"Relabelled from {old or 'none'} to {label}; its items are distilled again."
            )
    trajectory.refresh_from_db()
    if not request.htmx:
        return redirect(detail)
    return render(request, TEMPLATE, _context(request, bank, membership, trajectory, form=form, note=note, error=error))
