"""The item page's decisions on what follows serving: reopen a refused item,
archive one as wrong, keep one proposed for retirement, confirm that a stale
one still holds, set its validity, supersede it by another. One POST-only
view; every answer goes back to the item page with a message."""

from __future__ import annotations

from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required

from accounts.access import bank_for_user
from accounts.models import Role
from memories.items.models import MemoryItem
from memories.learning.refusals import memory_item_archive_as_wrong, memory_item_reopen
from memories.learning.retirement import memory_item_retirement_keep, memory_item_supersede_with
from memories.learning.validity import memory_item_stale_clear, memory_item_validity_set, validity_day_end
from memories.review.forms import LifecycleActionForm
from memories.review.selectors import item_for_bank
from memories.review.views.decisions import posted_queue_query, posted_version, with_query
from memories.review.views.item import item_or_404, item_url
from reasoningbank_site.errors import DomainError
from reasoningbank_site.views_helpers import post_action, redirect_after_post


def _valid_until(day) -> datetime | None:
    """A day chosen in the form: valid until the end of it in the reviewer's time zone; none when empty."""
    return None if day is None else validity_day_end(day)


@login_required
@post_action
def item_lifecycle(request, bank_id, item_id):
    bank, _membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    item = item_or_404(bank, item_id)
    focus = request.POST.get("focus") == "1"  # posted from the focus view: back to it, with the queue's filters
    back = item_url(bank, item, focus=focus)
    if focus:
        back = with_query(back, posted_queue_query(request))
    form = LifecycleActionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "; ".join(e for errs in form.errors.values() for e in errs))
        return redirect_after_post(request, back)
    data, seen = form.cleaned_data, posted_version(request)
    action, who = data["action"], request.user
    try:
        if action == "reopen":
            memory_item_reopen(item=item, author=who, note=data["note"], seen_version=seen)
            done = "Reopened: it is back in the review queue, its repeats kept as evidence."
        elif action == "archive-wrong":
            memory_item_archive_as_wrong(item=item, author=who, reason=data["note"], seen_version=seen)
            done = "Archived as wrong: later distillations of this lesson will be recorded here, never queued."
        elif action == "keep":
            memory_item_retirement_keep(item=item, author=who, note=data["note"], seen_version=seen)
            done = "Kept in service: the retirement proposal is cleared."
        elif action == "still-holds":
            memory_item_stale_clear(item=item, author=who, seen_version=seen)
            done = "Confirmed current: it now remembers the newer environment."
        elif action == "validity":
            memory_item_validity_set(
                item=item, author=who, valid_until=_valid_until(data["valid_until"]), seen_version=seen
            )
            done = "Validity saved."
        else:  # supersede
            try:
                replacement = item_for_bank(bank=bank, public_id=data["replacement"])
            except MemoryItem.DoesNotExist:
                raise DomainError("The replacement is not an item of this bank.") from None
            memory_item_supersede_with(item=item, replacement=replacement, author=who, seen_version=seen)
            done = f"Superseded by “{replacement.title}”."
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect_after_post(request, back)
