"""Slices of the review queue given to reviewers: who reviews what."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.review import collaboration_reads as collab
from memories.review.collaboration import review_assignment_create, review_assignment_delete
from memories.review.forms import AssignmentForm
from memories.review.models import ReviewAssignment
from memories.review.selectors import items_by_public_ids, review_agents
from reasoningbank_site.errors import DomainError
from reasoningbank_site.text import counted
from reasoningbank_site.views_helpers import post_action


def _assignments_page(request, bank, membership, form):
    assignments = collab.bank_assignments(bank=bank)
    context = {
        "bank": bank,
        "membership": membership,
        "can_write": membership.has_role(Role.REVIEWER),
        "assignments": assignments,
        "form": form,
    }
    return render(request, "memories/assignments.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def review_assignments(request, bank_id):
    """GET: who reviews which slice of the queue. POST (reviewers): give a slice to a reviewer."""
    role = Role.REVIEWER if request.method == "POST" else Role.VIEWER
    bank, membership = bank_for_user(request, bank_id, role=role)
    form = AssignmentForm(request.POST or None, bank=bank, agents=review_agents(bank=bank))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        items = list(items_by_public_ids(bank=bank, public_ids=data["items"]))
        missing = len(set(data["items"])) - len(items)
        if missing:
            form.add_error(
                "items", f"{counted(missing, 'listed item')} {'is' if missing == 1 else 'are'} not in this bank."
            )
        else:
            try:
                review_assignment_create(
                    bank=bank,
                    reviewer=data["reviewer"],
                    author=request.user,
                    origin=data["origin"],
                    verdict=data["verdict"],
                    agent=data["agent"],
                    tag=data["tag"],
                    items=items,
                    note=data["note"],
                )
            except DomainError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Assigned a slice of the queue to {data['reviewer'].get_username()}.")
                return redirect("memories:review_assignments", bank_id=bank.public_id)
    return _assignments_page(request, bank, membership, form)


@login_required
@post_action
def review_assignment_remove(request, bank_id, assignment_id):
    bank, _membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    assignment = (
        ReviewAssignment.objects.select_related("reviewer", "bank__team")
        .filter(bank=bank, public_id=assignment_id)
        .first()
    )
    if assignment is None:
        raise Http404("No such assignment.")
    review_assignment_delete(assignment=assignment, author=request.user)
    messages.success(request, f"Removed {assignment.reviewer.get_username()}'s slice ({assignment.describe()}).")
    return redirect("memories:review_assignments", bank_id=bank.public_id)
