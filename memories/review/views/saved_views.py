"""Saved queue views: a reviewer names the queue's current filters, and opens them again in one click."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import QueryDict
from django.shortcuts import redirect
from django.urls import reverse

from accounts.access import bank_for_user
from memories.review.policy import saved_view_delete, saved_view_save
from memories.review.views.decisions import queue_query
from reasoningbank_site.errors import DomainError
from reasoningbank_site.views_helpers import post_action


@login_required
@post_action
def saved_view_create(request, bank_id):
    """Save the posted ``queue`` filters as ``name``; back to the queue with them."""
    bank, _membership = bank_for_user(request, bank_id)
    query = queue_query(QueryDict(request.POST.get("queue", "")))
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    try:
        view = saved_view_save(bank=bank, user=request.user, name=request.POST.get("name", ""), query=query)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Saved the view “{view.name}”.")
    return redirect(f"{url}?{query}" if query else url)


@login_required
@post_action
def saved_view_remove(request, bank_id):
    """Delete the posted ``view`` (a public id) of the user's saved views."""
    bank, _membership = bank_for_user(request, bank_id)
    if saved_view_delete(bank=bank, user=request.user, public_id=request.POST.get("view", "")):
        messages.success(request, "Saved view deleted.")
    else:
        messages.error(request, "No such saved view.")
    return redirect("memories:review", bank_id=bank.public_id)
