"""The review queue: proposed items, oldest first, filterable, decided in bulk
or one row at a time (htmx answers with the row)."""

from __future__ import annotations

import uuid
from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.template.backends.utils import csrf_input
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.items.corroboration import COUNT_FIELDS
from memories.items.lifecycle import lifecycle_flags
from memories.items.models import MemoryItem
from memories.learning.selectors import LIFECYCLE_FIELDS, LifecycleState
from memories.review import collaboration_reads as collab
from memories.review import selectors as review_selectors
from memories.review.decisions import memory_item_approve, memory_item_reject
from memories.review.forms import BulkActionForm, ReviewFilterForm
from memories.review.guidelines import guidelines_panel_read
from memories.review.policy import review_policy_get
from memories.review.policy_models import Distribution
from memories.review.seats import queue_seating, review_deal
from memories.review.selectors import items_by_public_ids, queue_rows_claimed, review_agents
from memories.review.views.decisions import (
    offer_undo,
    pop_undo,
    posted_queue_query,
    posted_risk_confirmation,
    posted_version,
    queue_filters,
    queue_query,
    undo_offer,
    with_query,
)
from memories.review.votes import review_vote_cast, votes_needed, with_my_vote
from memories.trust.risk_reads import unconfirmed_risk_count
from reasoningbank_site.errors import DomainError, DuplicateApproval, RisksNeedConfirmation
from reasoningbank_site.search_paging import SearchPaginator
from reasoningbank_site.security import safe_next_url
from reasoningbank_site.text import counted
from reasoningbank_site.views_helpers import redirect_after_post, reverse_each, template_for, toast

PAGE_SIZE = 50
ROW_TEMPLATE = "memories/review.html#row"


def queue_row_links(request, bank, items, queue_qs: str) -> dict:
    """What the queue rows (``review.html#row``) link to and post, made once for
    the page rather than by a ``{% url %}`` and ``{% csrf_token %}`` per row:
    each item's ``focus_url`` and ``open_url`` (with the queue's filters
    ``queue_qs``), ``pid`` and ``seen`` (its public id and ``seen_version``
    as the row prints them several times: text made once, not converted and
    escaped at each use); returns the context's ``review_url`` (the
    decisions' form action), ``here`` (where they come back to) and
    ``csrf_input`` (the forms' token field)."""
    focus = reverse_each("memories:review_focus", "item_id", bank_id=bank.public_id)
    for item in items:
        item.focus_url = focus(item.public_id)
        item.open_url = with_query(item.focus_url, queue_qs)
        item.pid = mark_safe(item.public_id)  # a UUID: nothing to escape
        item.twin = _twin(item, focus)
        # "" where the caller did not annotate the row (a reverted row: the decision then checks no version)
        item.seen = mark_safe(getattr(item, "seen_version", ""))
    return {
        "review_url": reverse("memories:review", kwargs={"bank_id": bank.public_id}),
        "here": request.get_full_path(),
        "csrf_input": csrf_input(request),
        "queue_qs": queue_qs,
    }


# What review.html#row reads of an item. The page's rows reach the template as dicts: Django's template
# engine tries ``item[name]`` before ``item.name``, and the exception a model instance raises there is most of
# a row's rendering time (see bench/README.md, search pages).
ROW_FIELDS = (
    "pid",
    "status",
    "title",
    "description",
    "content",
    "tags",
    "created_at",
    "support_count",
    *COUNT_FIELDS,  # corroboration before serving (memories/includes/corroboration.html)
    "verdict_label",
    "model",  # the Demo LLM label (includes/demo_llm.html)
    "claimed_outcome",
    "my_vote",
    "near_duplicates",
    "twin",
    "needs_review_reason",
    "risk_count",
    "reviewed_by",
    "assignees",
    "open_url",
    "focus_url",
    "seen",
    "public_id",
    "seen_version",
    *LIFECYCLE_FIELDS,  # the lifecycle badges (memories/includes/lifecycle_badges.html)
)


def _twin(item, focus) -> dict | None:
    """The row's most similar near-duplicate suggestion (the one check's, at
    proposal) as ``{"title", "similarity", "url"}``, linked to its focus view;
    None without one (or when its id is not an item's)."""
    for entry in getattr(item, "near_duplicates", None) or ():
        try:
            return {
                "title": str(entry["title"]),
                "similarity": float(entry["similarity"]),
                "url": focus(uuid.UUID(str(entry["id"]))),
            }
        except (KeyError, TypeError, ValueError):
            continue
    return None


def queue_row(item) -> dict:
    """One queue row's values for ``review.html#row`` (after queue_row_links and the annotations)."""
    row = {name: getattr(item, name, "") for name in ROW_FIELDS}
    row["get_origin_display"] = item.get_origin_display()
    row["get_status_display"] = item.get_status_display()
    row["lifecycle_flags"] = lifecycle_flags(item)
    return row


@login_required
@require_http_methods(["GET", "POST"])
def review(request, bank_id):
    """GET: proposed items, oldest first, filterable. POST: approve or reject
    the checked items (bulk), or one row's item (htmx answers with that row)."""
    if request.method == "POST":
        return _review_post(request, bank_id)
    bank, membership = bank_for_user(request, bank_id)
    policy = review_policy_get(bank=bank)
    if policy.seated and policy.distribution == Distribution.ROUND_ROBIN:
        review_deal(bank=bank)  # items distilled since the last look get their reviewers
    form = ReviewFilterForm(request.GET or None, agents=partial(review_agents, bank=bank))
    filters = form.filters() if request.GET else {}
    rows_only = bool(request.htmx) and request.htmx.target == "queue"
    assignments, mine = collab.bank_assignments(bank=bank), request.GET.get("assigned") == "me"
    queue = _queue(request, bank, filters, mine=mine, assignments=assignments)
    rows = with_my_vote(collab.queue_rows_read_along(queue, user=request.user), user=request.user)
    page = SearchPaginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    collab.queue_rows_annotate(items=page.object_list, assignments=assignments, seats=policy.seated)
    queue_rows_claimed(items=page.object_list)
    context = {
        **queue_row_links(request, bank, page.object_list, queue_query(request.GET)),
        "rows": [queue_row(item) for item in page.object_list],
        "bank": bank,
        "membership": membership,
        "can_write": membership.has_role(Role.REVIEWER),
        "form": form,
        "page": page,
        "filtered": bool(request.GET),
        "narrowed": _narrowed(filters, mine),
        "filters_on": sum(bool(value) for key, value in filters.items() if key != "text") + mine,
        "state": filters.get("state", ""),
        "noun": queue_noun(filters.get("state", "")),
        "count_oob": rows_only,  # the filters swap the rows alone: their count comes with them
        "assigned_to_me": mine,
        "seating": queue_seating(policy=policy, user=request.user),
        "policy": policy,
        # Read (and recorded as shown) only for the whole page: the filters' answer is the rows alone.
        "guidelines": None
        if rows_only
        else guidelines_panel_read(bank=bank, user=request.user, text=policy.guidelines),
        "row_error": "",  # what a row answering a decision shows (set, so 50 rows do not each look it up in vain)
        "duplicate": None,
        "risk_confirmation": None,
        "undo": pop_undo(request),
    }
    return render(request, template_for(request, "memories/review.html", {"queue": "queue"}), context)


def _review_post(request, bank_id):
    bank, _membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    form = BulkActionForm(request.POST)
    back = safe_next_url(request, reverse("memories:review", kwargs={"bank_id": bank.public_id}))
    if not form.is_valid():
        message = "; ".join(e for errs in form.errors.values() for e in errs)
        if request.htmx:
            return toast(request, message)
        messages.error(request, message)
        return redirect(back)
    action, reason = form.cleaned_data["action"], form.cleaned_data["reason"].strip()
    if action == "reject" and not reason:
        if request.htmx:
            return toast(request, "A rejection needs a reason.")
        messages.error(request, "A rejection needs a reason.")
        return redirect(back)
    items = list(items_by_public_ids(bank=bank, public_ids=form.cleaned_data["items"]).order_by("created_at"))
    confirm = {
        "confirm_duplicate": request.POST.get("confirm_duplicate") == "1",
        # Only for the one item whose findings the dialog showed: a bulk approval never confirms risks.
        "confirm_risks": len(form.cleaned_data["items"]) == 1 and posted_risk_confirmation(request),
    }
    voting = votes_needed(bank=bank, membership=_membership)
    done, failed, unconfirmed, risky = [], [], [], []
    for item in items:
        try:
            seen = posted_version(request, f"seen-{item.public_id}")  # the version its row showed
            if voting:  # a policy of several decisions: this one is a vote, hidden from the others
                review_vote_cast(item=item, author=request.user, decision=action, reason=reason, **confirm)
            elif action == "approve":
                memory_item_approve(item=item, author=request.user, seen_version=seen, **confirm)
            else:
                memory_item_reject(item=item, author=request.user, reason=reason, seen_version=seen)
            done.append(item)
        except DuplicateApproval as exc:
            unconfirmed.append((item, exc))
        except RisksNeedConfirmation as exc:
            risky.append((item, exc))
        except DomainError as exc:
            failed.append((item, str(exc)))
    if request.htmx and request.POST.get("row"):
        first = items[0] if items else None
        return _row_answer(request, bank, first, action, failed, unconfirmed, risky=risky, voting=voting)
    verb = "approved" if action == "approve" else "rejected"
    if voting:
        verb = f"given your decision ({action}; the others do not see it until all have decided)"
    if done:
        messages.success(request, f"{counted(len(done), 'item')} {verb}.")
    if unconfirmed:
        titles = ", ".join(f"“{item.title}”" for item, _ in unconfirmed)
        messages.warning(
            request,
            f"Not approved, as near-duplicates of approved items: {titles}. "
            "Open each to compare, then confirm or merge.",
        )
    if risky:
        titles = ", ".join(f"“{item.title}”" for item, _ in risky)
        refused = "No vote cast on" if voting else "Not approved"
        messages.warning(request, f"{refused} items with unconfirmed risk findings: {titles}. Open each to read them.")
    for item, error in failed:
        messages.error(request, f"“{item.title}”: {error}")
    missing = len(form.cleaned_data["items"]) - len(items)
    if missing:
        messages.error(request, f"{counted(missing, 'selected item')} not found in this bank.")
    return redirect_after_post(request, back)


def _queue(request, bank, filters: dict, *, mine: bool, assignments=None):
    """The queue as ``filters`` (ReviewFilterForm.filters) and "assigned to me" (``mine``) narrow it: what the
    page lists and what its heading counts, one query for both."""
    queue = review_selectors.review_queue(bank=bank, **filters)
    if mine:
        assignments = collab.bank_assignments(bank=bank) if assignments is None else assignments
        queue = collab.queue_assigned_to(queue, assignments=assignments, user=request.user)
    return queue


def queue_noun(state: str) -> str:
    """What the queue's count counts: "proposed", or the lifecycle state it shows ("stale", …)."""
    return dict(LifecycleState.choices).get(state, "proposed").lower()


def _narrowed(filters: dict, mine: bool) -> bool:
    """Whether anything but the state (and the order) narrows the queue."""
    return mine or any(value for key, value in filters.items() if key not in ("state", "sort"))


def _append_queue_count(request, response, bank, queue: str) -> None:
    """Send the heading's "N proposed" again (out of band) with a row's answer: the queue, as filtered, shrank."""
    filters = queue_filters(bank, queue)
    mine = QueryDict(queue).get("assigned") == "me"
    paginator = SearchPaginator(_queue(request, bank, filters, mine=mine), PAGE_SIZE)
    noun = queue_noun(filters.get("state", ""))
    context = {"count": paginator.count, "capped": paginator.capped, "noun": noun, "oob": True}
    html = render_to_string("memories/review.html#count", context, request)
    # In a <template>, which htmx unwraps: after a table row the HTML parser would move a bare span.
    response.content += f"<template>{html}</template>".encode()


def _row_answer(request, bank, item, action: str, failed, unconfirmed, *, risky=(), voting: bool = False):
    """A decision taken on one queue row (htmx): the row again, with the refusal,
    the duplicate or the risk findings to confirm, else with a toast offering Undo."""
    if item is None:
        return toast(request, "That item no longer exists.")
    rows = collab.queue_rows_read_along(MemoryItem.objects.filter(pk=item.pk), user=request.user)
    # Its risk badge stays after a vote: the findings are unconfirmed until the votes decide.
    item = with_my_vote(rows, user=request.user).annotate(risk_count=unconfirmed_risk_count()).get()
    seated = review_policy_get(bank=bank).seated
    collab.queue_rows_annotate(items=[item], assignments=collab.bank_assignments(bank=bank), seats=seated)
    queue_rows_claimed(items=[item])
    queue = posted_queue_query(request)
    context = {
        **queue_row_links(request, bank, [item], queue),
        "bank": bank,
        "item": item,
        "can_write": True,
        "row_error": failed[0][1] if failed else "",
        "duplicate": unconfirmed[0][1] if unconfirmed else None,
        "risk_confirmation": risky[0][1] if risky else None,
    }
    response = render(request, ROW_TEMPLATE, context)
    if failed or unconfirmed or risky:
        return response
    _append_queue_count(request, response, bank, queue)
    text = f"{'Approved' if action == 'approve' else 'Rejected'} “{item.title}”."
    if voting:
        text = f"Your decision on “{item.title}” ({action}) is recorded."
    target = f"#item-{item.public_id}"
    return offer_undo(
        request,
        response,
        undo_offer(request, bank, item, text=text, focus=False, queue=queue, target=target, row=True),
    )
