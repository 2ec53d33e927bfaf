"""The guidelines panel's fold: a reviewer folds the bank's guidelines (or keeps them open), and the queue
shows them that way on the next visit. A plain form post (back to the page) or, from app.js on the panel's
toggle, an htmx one (nothing to swap)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from accounts.access import bank_for_user
from memories.review.guidelines import guidelines_fold_set
from reasoningbank_site.security import safe_next_url
from reasoningbank_site.views_helpers import post_action


@login_required
@post_action
def guidelines_fold(request, bank_id):
    """Remember the posted ``folded`` ("1": folded, else open) for this reviewer and bank; back to ``next``."""
    bank, _membership = bank_for_user(request, bank_id)
    guidelines_fold_set(bank=bank, user=request.user, folded=request.POST.get("folded") == "1")
    if request.htmx:
        return HttpResponse(status=204)
    return redirect(safe_next_url(request, reverse("memories:review", kwargs={"bank_id": bank.public_id})))
