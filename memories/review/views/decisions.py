"""What a review decision carries between pages: the item version its form
showed, the queue's filters (kept through the focus view), and the toast that
offers to take the decision back for a few seconds."""

from __future__ import annotations

from functools import partial

from django.http import QueryDict
from django.template.loader import render_to_string
from django.urls import reverse

from memories.review.forms import ReviewFilterForm
from memories.review.reverts import memory_item_last_decision
from memories.review.selectors import review_agents
from reasoningbank_site.security import safe_next_url
from reasoningbank_site.values import ascii_number


def posted_version(request, key: str = "seen_version") -> int | None:
    """The item version a form was rendered with (a hidden field), or None
    when the form did not send one (old pages, other clients: no check)."""
    return ascii_number(request.POST.get(key) or "")


def posted_risk_confirmation(request) -> bool | frozenset[int]:
    """What a confirmation of risk findings posted: False without ``confirm_risks=1``; else the ids of the
    findings its dialog showed (``risk`` fields), so a finding added since is asked about again; True (all)
    for a form that names none (old pages)."""
    if request.POST.get("confirm_risks") != "1":
        return False
    ids = frozenset(n for n in map(ascii_number, request.POST.getlist("risk")) if n is not None)
    return ids or True


# --- the queue's filters, carried through the focus view --------------------------------

QUEUE_FILTERS = (*ReviewFilterForm.base_fields, "assigned")  # "assigned=me": the queue view narrows it


def queue_query(data: QueryDict) -> str:
    """The queue's filters in ``data`` (non-empty ones, no page number) as a
    query string, for links and forms that must keep them."""
    kept = QueryDict(mutable=True)
    for name in QUEUE_FILTERS:
        value = data.get(name, "")
        if value:
            kept[name] = value
    return kept.urlencode()


def posted_queue_query(request) -> str:
    """The filters a POST carries: its ``queue`` field (focus view), else those of its ``next`` page (queue row)."""
    if "queue" in request.POST:
        return queue_query(QueryDict(request.POST.get("queue", "")))
    return queue_query(QueryDict(request.POST.get("next", "").partition("?")[2]))


def queue_filters(bank, query: str) -> dict:
    form = ReviewFilterForm(QueryDict(query), agents=partial(review_agents, bank=bank))
    return form.filters() if query else {}


def with_query(url: str, query: str) -> str:
    return f"{url}?{query}" if query else url


# --- undo: a decision's toast offers to take it back for a few seconds ------------------

UNDO_SESSION_KEY = "rb_undo"


def undo_offer(request, bank, item, *, text: str, focus: bool, queue: str, target: str = "", row: bool = False):
    """What the toast needs to offer Undo for ``item``'s latest decision (None when there is none to take back)."""
    decision = memory_item_last_decision(item=item)
    if decision is None:
        return None
    url = reverse("memories:item_revert", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
    next_url = safe_next_url(request, "")
    return {
        "text": text,
        "url": url,
        "decision": decision.number,
        "focus": focus,
        "queue": queue,
        "target": target,
        "row": row,
        "next": next_url,
    }


def offer_undo(request, response, offer):
    """Deliver an undo offer with ``response``: an htmx answer that swaps
    content carries the toast out-of-band; a redirect leaves it in the
    session for the next page's toast."""
    if offer is None:
        return response
    if request.htmx and response.status_code == 200 and "HX-Redirect" not in response:
        append_toast(request, response, {"undo": offer})
    else:
        offer["target"], offer["row"] = "", False  # the next page has no such region: a plain form
        request.session[UNDO_SESSION_KEY] = offer
    return response


def append_toast(request, response, context: dict) -> None:
    """Add the out-of-band toast to an htmx answer. In a <template>, which htmx
    unwraps: after a table row the HTML parser would tear a bare form apart."""
    html = render_to_string("includes/toast.html", {**context, "oob": True}, request)
    response.content += f"<template>{html}</template>".encode()


def pop_undo(request):
    return None if request.htmx else request.session.pop(UNDO_SESSION_KEY, None)
