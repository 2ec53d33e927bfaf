"""Claiming and giving up places on items, when a bank's review policy
distributes its several decisions per item (memories.review.seats)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse

from accounts.access import bank_for_user
from accounts.models import Role
from memories.review.seats import review_claim, review_claim_next, review_release
from memories.review.views.item import item_or_404
from reasoningbank_site.errors import DomainError, NotFound
from reasoningbank_site.security import safe_next_url
from reasoningbank_site.text import counted, has_control_chars
from reasoningbank_site.views_helpers import post_action

CLAIM_NEXT = 10


@login_required
@post_action
def review_claim_batch(request, bank_id):
    """Claim places on the next CLAIM_NEXT items with a free place; then the queue shows the reviewer's own."""
    bank, _membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    queue = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    try:
        claimed = review_claim_next(bank=bank, user=request.user, count=CLAIM_NEXT)
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect(queue)
    if claimed:
        messages.success(request, f"Claimed {counted(claimed, 'item')}: they are yours to decide.")
    else:
        messages.info(request, "No item has a free place: every waiting item is claimed, or you decided on it.")
    return redirect(f"{queue}?assigned=me")


@login_required
@post_action
def review_claim_item(request, bank_id, item_id):
    bank, _membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    item = item_or_404(bank, item_id)
    try:
        review_claim(item=item, user=request.user)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"“{item.title}” is yours to decide.")
    return redirect(safe_next_url(request, reverse("memories:review_focus", args=[bank.public_id, item.public_id])))


@login_required
@post_action
def review_release_item(request, bank_id, item_id):
    """Give up a place: the reviewer's own, or (owners and admins) the posted ``holder``'s."""
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    item = item_or_404(bank, item_id)
    username = request.POST.get("holder", "").strip() or request.user.get_username()
    holder = None if has_control_chars(username) else get_user_model().objects.filter(username=username).first()
    try:
        if holder is None:
            raise NotFound(f"No user {username!r} holds a place on this item.")
        review_release(item=item, holder=holder, actor=request.user, actor_membership=membership)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        whose = "your" if holder.pk == request.user.pk else f"{holder.get_username()}'s"
        messages.success(request, f"Gave up {whose} place on “{item.title}”.")
    return redirect(safe_next_url(request, reverse("memories:review_focus", args=[bank.public_id, item.public_id])))
