"""One item: its page, the same page as the review queue's focus view (with
the source trajectory beside it and the queue's neighbours), and an item set
beside one of its near-duplicates."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.access import bank_for_user
from accounts.models import Role
from memories.items.lifecycle import item_lifecycle
from memories.items.models import MemoryItem
from memories.items.transitions import ITEM_REVERTS
from memories.review import selectors as review_selectors
from memories.review.duplicates import item_supports, items_compare, rejected_lookalikes, supports_trajectory_ids
from memories.review.forms import ItemEditForm, RejectForm
from memories.review.policy import review_policy_get
from memories.review.seats import item_seating
from memories.review.selectors import item_for_bank, item_history, item_near_duplicates, item_sources, trajectory_tasks
from memories.review.views.decisions import pop_undo, posted_queue_query, queue_filters, queue_query
from memories.review.votes import item_votes_visible
from memories.trust.provenance.display import item_provenance_view
from reasoningbank_site.views_helpers import template_for

ITEM_TEMPLATE = "memories/item_detail.html"


def item_or_404(bank, item_id) -> MemoryItem:
    try:
        item = item_for_bank(bank=bank, public_id=item_id)
    except MemoryItem.DoesNotExist:
        raise Http404("No such item.") from None
    item.bank = bank  # the same bank (filtered above): its searches need not load it again
    return item


def item_url(bank, item, *, focus: bool) -> str:
    name = "memories:review_focus" if focus else "memories:item_detail"
    return reverse(name, kwargs={"bank_id": bank.public_id, "item_id": item.public_id})


def _sorted_neighbours(queue, item) -> tuple[MemoryItem | None, MemoryItem | None, int, int]:
    """Neighbours and position in a queue in another order than the default: from its ordered ids."""
    ids = list(queue.values_list("pk", flat=True))
    if item.pk not in ids:
        return None, None, 0, len(ids)
    at = ids.index(item.pk)
    around = {i.pk: i for i in queue.model.objects.filter(pk__in=ids[max(0, at - 1) : at + 2])}
    previous = around.get(ids[at - 1]) if at > 0 else None
    following = around.get(ids[at + 1]) if at + 1 < len(ids) else None
    return previous, following, at + 1, len(ids)


def queue_position(bank, item, filters: dict) -> tuple[int, int]:
    """(where ``item`` stands in the queue narrowed by ``filters``, 1-based, or 0 when it is not in it; how many
    items the queue holds): the focus view's "7 of 23"."""
    queue = review_selectors.review_queue(bank=bank, **filters)
    total = queue.count()
    if item.status != "proposed" or not queue.filter(pk=item.pk).exists():
        return 0, total
    before = Q(created_at__lt=item.created_at) | Q(created_at=item.created_at, id__lt=item.id)
    return queue.filter(before).count() + 1, total


def queue_neighbours(bank, item, filters: dict) -> tuple[MemoryItem | None, MemoryItem | None]:
    """The proposed items just before and after ``item`` in queue order, in the queue narrowed by ``filters``.
    In another order than the default (``sort``), from the queue's ordered ids; an item no longer in the
    queue (just decided) is followed by the first one still to decide."""
    if filters.get("sort"):
        queue = review_selectors.review_queue(bank=bank, **filters)
        previous, following, position, _total = _sorted_neighbours(queue, item)
        return (previous, following) if position else (None, queue.first())
    queue = review_selectors.review_queue(bank=bank, **filters).exclude(pk=item.pk)
    before = Q(created_at__lt=item.created_at) | Q(created_at=item.created_at, id__lt=item.id)
    after = Q(created_at__gt=item.created_at) | Q(created_at=item.created_at, id__gt=item.id)
    previous = queue.filter(before).order_by("-created_at", "-id").first()
    following = queue.filter(after).order_by("created_at", "id").first()
    return previous, following


def item_context(
    request,
    bank,
    membership,
    item,
    *,
    focus: bool,
    edit_form=None,
    reject_form=None,
    merge_error="",
    duplicate=None,
    risks=None,
):
    can_write = membership.has_role(Role.REVIEWER)
    editing = edit_form is not None or (request.GET.get("edit") == "1" and can_write)
    if editing and edit_form is None:
        edit_form = ItemEditForm(instance=item)
    supports = item_supports(item=item)
    sources = item_sources(item=item)
    tasks = trajectory_tasks(
        bank_id=bank.pk, public_ids=[*sources.trajectory_ids, *(t for s in supports for t in s.trajectory_ids)]
    )
    for support in supports:
        support.trajectory_links = [(tid, tasks.get(tid, "")) for tid in support.trajectory_ids]
    policy = review_policy_get(bank=bank)
    required = policy.decisions_required
    votes, voted = item_votes_visible(item=item, user=request.user, membership=membership, required=required)
    context = {
        "votes": votes,
        "voted": voted,
        "decisions_required": required,
        "seating": item_seating(item=item, user=request.user, policy=policy),
        "bank": bank,
        "membership": membership,
        "can_write": can_write,
        "item": item,
        "focus": focus,
        "here": item_url(bank, item, focus=focus),
        "editing": editing,
        "edit_form": edit_form,
        "reject_form": reject_form or RejectForm(),
        "merge_error": merge_error,
        "duplicate": duplicate,  # a DuplicateApproval to confirm
        "risk_confirmation": risks,  # a RisksNeedConfirmation to confirm
        "supports": supports,
        "support_trajectories": supports_trajectory_ids(supports),
        "duplicates": item_near_duplicates(item=item),
        "rejected_lookalikes": rejected_lookalikes(item=item),
        "history": item_history(item=item),
        "revertible": tuple(ITEM_REVERTS),
        "sources": sources,
        "source_links": [(tid, tasks.get(tid, "")) for tid in sources.trajectory_ids],
        "lifecycle": item_lifecycle(bank=bank, item=item),
        "provenance": item_provenance_view(item=item),
    }
    if focus:
        queue = posted_queue_query(request) if request.method == "POST" else queue_query(request.GET)
        context["queue_qs"] = queue
        filters = queue_filters(bank, queue)
        if filters.get("sort"):
            _p, _f, position, total = _sorted_neighbours(review_selectors.review_queue(bank=bank, **filters), item)
            context["previous"], context["following"] = queue_neighbours(bank, item, filters)
            context.update(position=position, queue_total=total)
        else:
            context["previous"], context["following"] = queue_neighbours(bank, item, filters)
            context["position"], context["queue_total"] = queue_position(bank, item, filters)
    return context


def _item_page(request, bank_id, item_id, *, focus: bool):
    bank, membership = bank_for_user(request, bank_id)
    item = item_or_404(bank, item_id)
    context = item_context(request, bank, membership, item, focus=focus)
    context["undo"] = pop_undo(request)
    return render(request, template_for(request, ITEM_TEMPLATE, {"item-panel": "panel"}), context)


@login_required
@require_GET
def item_detail(request, bank_id, item_id):
    return _item_page(request, bank_id, item_id, focus=False)


@login_required
@require_GET
def review_focus(request, bank_id, item_id):
    """One proposed item with its source trajectory beside it; a decision
    taken here moves on to the next item in the queue."""
    return _item_page(request, bank_id, item_id, focus=True)


@login_required
@require_GET
def item_compare(request, bank_id, item_id, other_id):
    """An item and one of its near-duplicates side by side, with a word diff of their text."""
    bank, membership = bank_for_user(request, bank_id)
    item, other = item_or_404(bank, item_id), item_or_404(bank, other_id)
    context = {
        "bank": bank,
        "membership": membership,
        "can_write": membership.has_role(Role.REVIEWER),
        "comparison": items_compare(item=item, other=other),
    }
    return render(request, "memories/item_compare.html", context)
