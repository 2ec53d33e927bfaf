"""Comments on an item or a trajectory (session auth): viewers read,
reviewers write, authors delete their own.

The comments block is loaded into the item page, the focus view and the
trajectory page by htmx (``trajectories/comments_slot.html``); without
JavaScript its link opens the same view as a page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.items.models import MemoryItem
from memories.review.selectors import item_for_bank
from reasoningbank_site.errors import DomainError
from reasoningbank_site.views_helpers import post_action
from trajectories.models import Trajectory
from trajectories.records.comments import comment_add, comment_delete, comments_on
from trajectories.records.models import COMMENT_MAX, Comment
from trajectories.records.selectors import trajectory_for_bank

COMMENTS_TEMPLATE = "trajectories/comments.html"


def _comments_answer(request, bank, membership, *, item=None, trajectory=None, error="", body=""):
    if item is not None:
        url = reverse("trajectories:item_comments", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
        back = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
        about = item.title
    else:
        url = reverse(
            "trajectories:trajectory_comments",
            kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id},
        )
        back = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
        about = trajectory.task
    context = {
        "bank": bank,
        "membership": membership,
        "can_write": membership.has_role(Role.REVIEWER),
        "comments": comments_on(item=item, trajectory=trajectory),
        "comments_url": url,
        "back": back,
        "about": about,
        "error": error,
        "body": body,
        "comment_max": COMMENT_MAX,
    }
    template = f"{COMMENTS_TEMPLATE}#block" if request.htmx else COMMENTS_TEMPLATE
    return render(request, template, context)


def _comments(request, bank_id, *, item_id=None, trajectory_id=None):
    role = Role.REVIEWER if request.method == "POST" else Role.VIEWER
    bank, membership = bank_for_user(request, bank_id, role=role)
    item = trajectory = None
    if item_id is not None:
        try:
            item = item_for_bank(bank=bank, public_id=item_id)
        except MemoryItem.DoesNotExist:
            raise Http404("No such item.") from None
    else:
        try:
            trajectory = trajectory_for_bank(bank=bank, public_id=trajectory_id)
        except Trajectory.DoesNotExist:
            raise Http404("No such trajectory.") from None
    if request.method == "POST":
        body = request.POST.get("body", "")
        try:
            comment_add(bank=bank, author=request.user, body=body, item=item, trajectory=trajectory)
        except DomainError as exc:
            return _comments_answer(
                request, bank, membership, item=item, trajectory=trajectory, error=str(exc), body=body
            )
        if not request.htmx:
            messages.success(request, "Comment added.")
    return _comments_answer(request, bank, membership, item=item, trajectory=trajectory)


@login_required
@require_http_methods(["GET", "POST"])
def item_comments(request, bank_id, item_id):
    """GET: the comments on an item (the block for htmx, else a page). POST: add one (reviewers)."""
    return _comments(request, bank_id, item_id=item_id)


@login_required
@require_http_methods(["GET", "POST"])
def trajectory_comments(request, bank_id, trajectory_id):
    """GET: the comments on a trajectory (the block for htmx, else a page). POST: add one (reviewers)."""
    return _comments(request, bank_id, trajectory_id=trajectory_id)


@login_required
@post_action
def comment_remove(request, bank_id, comment_id):
    """Delete your own comment; answers with the block it was in."""
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    comment = (
        Comment.objects.select_related("bank__team", "item", "trajectory")
        .filter(bank=bank, public_id=comment_id)
        .first()
    )
    if comment is None:
        raise Http404("No such comment.")
    error = ""
    try:
        comment_delete(comment=comment, user=request.user)
    except DomainError as exc:
        error = str(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        if comment.item_id:
            return redirect("trajectories:item_comments", bank_id=bank.public_id, item_id=comment.item.public_id)
        return redirect(
            "trajectories:trajectory_comments", bank_id=bank.public_id, trajectory_id=comment.trajectory.public_id
        )
    return _comments_answer(request, bank, membership, item=comment.item, trajectory=comment.trajectory, error=error)
