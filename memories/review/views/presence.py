"""Who else has an item open in the focus view: the view's heartbeat."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from accounts.access import bank_for_user
from accounts.models import Role
from memories.review import collaboration_reads as collab
from memories.review.collaboration import review_presence_touch
from memories.review.views.item import item_or_404
from reasoningbank_site.views_helpers import post_action


@login_required
@post_action
def review_presence(request, bank_id, item_id):
    """The focus view's heartbeat (every 15 s): a reviewer's beat records that
    they have the item open; every beat answers who else has it open."""
    bank, membership = bank_for_user(request, bank_id)
    item = item_or_404(bank, item_id)
    if membership.has_role(Role.REVIEWER):
        review_presence_touch(item=item, user=request.user)
    others = collab.item_present_reviewers(items=[item], exclude_user=request.user).get(item.pk, [])
    context = {"bank": bank, "item": item, "reviewed_by": others, "beat": True}
    return render(request, "memories/presence.html", context)
