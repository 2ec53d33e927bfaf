"""HTML views of a bank's memories (session auth): the review queue, the
focus view, the item list, one item and its actions, import/export, the
retrieval playground.

Each view: check access (viewers read; reviewers write) → parse a form →
call a service → render the page, or its named partial for htmx. Each action
of the item page is its own POST-only view."""

from __future__ import annotations

import json
from functools import partial
from typing import NamedTuple

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, QueryDict, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.template.backends.utils import csrf_input
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories import selectors, services
from memories.forms import (
    BulkActionForm,
    ImportForm,
    ItemCreateForm,
    ItemEditForm,
    ItemListFilterForm,
    MergeForm,
    PlaygroundForm,
    RejectForm,
    ReviewFilterForm,
)
from memories.models import ItemStatus, MemoryItem
from memories.selectors import collaboration as collab
from memories.views_reviewers import posted_version
from reasoningbank_site.errors import DomainError, DuplicateApproval
from reasoningbank_site.search import SearchPaginator
from reasoningbank_site.security import safe_next_url
from reasoningbank_site.text import counted
from reasoningbank_site.views_helpers import (
    htmx_template,
    post_action,
    redirect_after_post,
    reverse_each,
    template_for,
    toast,
)

PAGE_SIZE = 50


def _page(qs, number, size=PAGE_SIZE):
    return SearchPaginator(qs, size).get_page(number)


def _can_write(membership) -> bool:
    return membership.has_role(Role.REVIEWER)


def _queue_row_links(request, bank, items, queue_qs: str) -> dict:
    """What the queue rows (``review.html#row``) link to and post, made once for
    the page (per row, the ``{% url %}`` and ``{% csrf_token %}`` tags were a
    third of its rendering): each item's ``focus_url`` and ``open_url`` (with
    the queue's filters ``queue_qs``), ``pid`` and ``seen`` (its public id and
    ``seen_version`` as the row prints them, 9 and 3 times: text made once, not
    converted and escaped at each use); returns the context's ``review_url``
    (the decisions' form action), ``here`` (where they come back to) and
    ``csrf_input`` (the forms' token field)."""
    focus = reverse_each("memories:review_focus", "item_id", bank_id=bank.public_id)
    for item in items:
        item.focus_url = focus(item.public_id)
        item.open_url = _with_query(item.focus_url, queue_qs)
        item.pid = mark_safe(item.public_id)  # a UUID: nothing to escape
        # An int (str() prints it as the template did: no thousands separator); "" as before where the
        # caller did not annotate the row (a reverted row: the decision then checks no version).
        item.seen = mark_safe(getattr(item, "seen_version", ""))
    return {
        "review_url": reverse("memories:review", kwargs={"bank_id": bank.public_id}),
        "here": request.get_full_path(),
        "csrf_input": csrf_input(request),
        "queue_qs": queue_qs,
    }


# --- the queue's filters, carried through the focus view --------------------------------

QUEUE_FILTERS = tuple(ReviewFilterForm.base_fields)


def _queue_query(data: QueryDict) -> str:
    """The queue's filters in ``data`` (non-empty ones, no page number) as a
    query string, for links and forms that must keep them."""
    kept = QueryDict(mutable=True)
    for name in QUEUE_FILTERS:
        value = data.get(name, "")
        if value:
            kept[name] = value
    return kept.urlencode()


def _posted_queue_query(request) -> str:
    """The filters a POST carries: its ``queue`` field (focus view), else those of its ``next`` page (queue row)."""
    if "queue" in request.POST:
        return _queue_query(QueryDict(request.POST.get("queue", "")))
    return _queue_query(QueryDict(request.POST.get("next", "").partition("?")[2]))


def _queue_filters(bank, query: str) -> dict:
    form = ReviewFilterForm(QueryDict(query), agents=partial(selectors.review_agents, bank=bank))
    return form.filters() if query else {}


def _with_query(url: str, query: str) -> str:
    return f"{url}?{query}" if query else url


# --- undo: a decision's toast offers to take it back for a few seconds ------------------

UNDO_SESSION_KEY = "rb_undo"


def _undo_offer(request, bank, item, *, text: str, focus: bool, queue: str, target: str = "", row: bool = False):
    """What the toast needs to offer Undo for ``item``'s latest decision (None when there is none to take back)."""
    decision = services.memory_item_last_decision(item=item)
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


def _offer_undo(request, response, offer):
    """Deliver an undo offer with ``response``: an htmx answer that swaps
    content carries the toast out-of-band; a redirect leaves it in the
    session for the next page's toast."""
    if offer is None:
        return response
    if request.htmx and response.status_code == 200 and "HX-Redirect" not in response:
        _append_toast(request, response, {"undo": offer})
    else:
        offer["target"], offer["row"] = "", False  # the next page has no such region: a plain form
        request.session[UNDO_SESSION_KEY] = offer
    return response


def _append_toast(request, response, context: dict) -> None:
    """Add the out-of-band toast to an htmx answer. In a <template>, which htmx
    unwraps: after a table row the HTML parser would tear a bare form apart."""
    html = render_to_string("includes/toast.html", {**context, "oob": True}, request)
    response.content += f"<template>{html}</template>".encode()


def _pop_undo(request):
    return None if request.htmx else request.session.pop(UNDO_SESSION_KEY, None)


# --- review queue ----------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def review(request, bank_id):
    """GET: proposed items, oldest first, filterable. POST: approve or reject
    the checked items (bulk), or one row's item (htmx answers with that row)."""
    if request.method == "POST":
        return _review_post(request, bank_id)
    bank, membership = bank_for_user(request, bank_id)
    form = ReviewFilterForm(request.GET or None, agents=partial(selectors.review_agents, bank=bank))
    queue = selectors.review_queue(bank=bank, **(form.filters() if request.GET else {}))
    assignments, mine = collab.bank_assignments(bank=bank), request.GET.get("assigned") == "me"
    if mine:
        queue = collab.queue_assigned_to(queue, assignments=assignments, user=request.user)
    page = _page(collab.queue_rows_read_along(queue, user=request.user), request.GET.get("page"))
    collab.queue_rows_annotate(items=page.object_list, assignments=assignments)
    context = {
        **_queue_row_links(request, bank, page.object_list, _queue_query(request.GET)),
        "bank": bank,
        "membership": membership,
        "can_write": _can_write(membership),
        "form": form,
        "page": page,
        "filtered": bool(request.GET),
        "assigned_to_me": mine,
        "row_error": "",  # what a row answering a decision shows (set, so 50 rows do not each look it up in vain)
        "duplicate": None,
        "undo": _pop_undo(request),
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
    items = list(selectors.items_by_public_ids(bank=bank, public_ids=form.cleaned_data["items"]).order_by("created_at"))
    confirm = request.POST.get("confirm_duplicate") == "1"
    done, failed, unconfirmed = [], [], []
    for item in items:
        try:
            seen = posted_version(request, f"seen-{item.public_id}")  # the version its row showed
            if action == "approve":
                services.memory_item_approve(
                    item=item, author=request.user, confirm_duplicate=confirm, seen_version=seen
                )
            else:
                services.memory_item_reject(item=item, author=request.user, reason=reason, seen_version=seen)
            done.append(item)
        except DuplicateApproval as exc:
            unconfirmed.append((item, exc))
        except DomainError as exc:
            failed.append((item, str(exc)))
    if request.htmx and request.POST.get("row"):
        item = items[0] if items else None
        if item is None:
            return toast(request, "That item no longer exists.")
        item = collab.queue_rows_read_along(MemoryItem.objects.filter(pk=item.pk), user=request.user).get()
        collab.queue_rows_annotate(items=[item], assignments=collab.bank_assignments(bank=bank))
        queue = _posted_queue_query(request)
        context = {
            **_queue_row_links(request, bank, [item], queue),
            "bank": bank,
            "item": item,
            "can_write": True,
            "row_error": failed[0][1] if failed else "",
            "duplicate": unconfirmed[0][1] if unconfirmed else None,
        }
        response = render(request, "memories/review.html#row", context)
        if failed or unconfirmed:
            return response
        text = f"{'Approved' if action == 'approve' else 'Rejected'} “{item.title}”."
        target = f"#item-{item.public_id}"
        return _offer_undo(
            request,
            response,
            _undo_offer(request, bank, item, text=text, focus=False, queue=queue, target=target, row=True),
        )
    verb = "approved" if action == "approve" else "rejected"
    if done:
        messages.success(request, f"{counted(len(done), 'item')} {verb}.")
    if unconfirmed:
        titles = ", ".join(f"“{item.title}”" for item, _ in unconfirmed)
        messages.warning(
            request,
            f"Not approved, as near-duplicates of approved items: {titles}. "
            "Open each to compare, then confirm or merge.",
        )
    for item, error in failed:
        messages.error(request, f"“{item.title}”: {error}")
    missing = len(form.cleaned_data["items"]) - len(items)
    if missing:
        messages.error(request, f"{counted(missing, 'selected item')} not found in this bank.")
    return redirect_after_post(request, back)


# --- one item (also the focus view of the queue) ---------------------------------------

ITEM_TEMPLATE = "memories/item_detail.html"


def _item_or_404(bank, item_id) -> MemoryItem:
    try:
        return selectors.item_for_bank(bank=bank, public_id=item_id)
    except MemoryItem.DoesNotExist:
        raise Http404("No such item.") from None


def _item_url(bank, item, *, focus: bool) -> str:
    name = "memories:review_focus" if focus else "memories:item_detail"
    return reverse(name, kwargs={"bank_id": bank.public_id, "item_id": item.public_id})


def _queue_neighbours(bank, item, filters: dict) -> tuple[MemoryItem | None, MemoryItem | None]:
    """The proposed items just before and after ``item`` in queue order, in the queue narrowed by ``filters``."""
    queue = selectors.review_queue(bank=bank, **filters).exclude(pk=item.pk)
    before = Q(created_at__lt=item.created_at) | Q(created_at=item.created_at, id__lt=item.id)
    after = Q(created_at__gt=item.created_at) | Q(created_at=item.created_at, id__gt=item.id)
    previous = queue.filter(before).order_by("-created_at", "-id").first()
    following = queue.filter(after).order_by("created_at", "id").first()
    return previous, following


def _item_context(
    request, bank, membership, item, *, focus: bool, edit_form=None, reject_form=None, merge_error="", duplicate=None
):
    editing = edit_form is not None or (request.GET.get("edit") == "1" and _can_write(membership))
    if editing and edit_form is None:
        edit_form = ItemEditForm(instance=item)
    supports = selectors.item_supports(item=item)
    context = {
        "bank": bank,
        "membership": membership,
        "can_write": _can_write(membership),
        "item": item,
        "focus": focus,
        "here": _item_url(bank, item, focus=focus),
        "editing": editing,
        "edit_form": edit_form,
        "reject_form": reject_form or RejectForm(),
        "merge_error": merge_error,
        "duplicate": duplicate,  # a DuplicateApproval to confirm
        "supports": supports,
        "support_trajectories": selectors.supports_trajectory_ids(supports),
        "duplicates": selectors.item_near_duplicates(item=item),
        "history": selectors.item_history(item=item),
        "revertible": tuple(services.ITEM_REVERTS),
        "sources": selectors.item_sources(item=item),
    }
    if focus:
        queue = _posted_queue_query(request) if request.method == "POST" else _queue_query(request.GET)
        context["queue_qs"] = queue
        context["previous"], context["following"] = _queue_neighbours(bank, item, _queue_filters(bank, queue))
    return context


def _item_page(request, bank_id, item_id, *, focus: bool):
    bank, membership = bank_for_user(request, bank_id)
    item = _item_or_404(bank, item_id)
    context = _item_context(request, bank, membership, item, focus=focus)
    context["undo"] = _pop_undo(request)
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


# --- the actions of the item page: one POST-only view each ---------------------------------


class _Target(NamedTuple):
    bank: object
    membership: object
    item: MemoryItem
    focus: bool  # posted from the focus view (the forms say so with focus=1)


def _target(request, bank_id, item_id) -> _Target:
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    return _Target(bank, membership, _item_or_404(bank, item_id), request.POST.get("focus") == "1")


def _item_answer(
    request, t: _Target, *, decided=False, edit_form=None, reject_form=None, merge_error="", duplicate=None
):
    """How an item action answers. In the focus view a decision moves on to
    the next item of the queue (or the queue when none is left). Otherwise
    back to the item: its panel for htmx, the page with the form and its
    errors, or a redirect to the page."""
    if decided and t.focus:
        queue = _posted_queue_query(request)
        _, following = _queue_neighbours(t.bank, t.item, _queue_filters(t.bank, queue))
        target = (
            _item_url(t.bank, following, focus=True)
            if following
            else reverse("memories:review", kwargs={"bank_id": t.bank.public_id})
        )
        return redirect_after_post(request, _with_query(target, queue))
    if edit_form is None and reject_form is None and not merge_error and duplicate is None and not request.htmx:
        return redirect(_item_url(t.bank, t.item, focus=t.focus))
    t.item.refresh_from_db()
    context = _item_context(
        request,
        t.bank,
        t.membership,
        t.item,
        focus=t.focus,
        edit_form=edit_form,
        reject_form=reject_form,
        merge_error=merge_error,
        duplicate=duplicate,
    )
    return render(request, htmx_template(request, ITEM_TEMPLATE, "panel"), context)


def _act(request, t: _Target, call, *, done: str, decided: bool = True, undo: bool = False, **forms):
    """Run an item action's service ``call`` (a ``partial``): a refusal becomes an error
    message (``forms`` are shown again with what was typed), success the
    ``done`` message — in the toast with an Undo button when ``undo`` and the
    action decided something that can be taken back; then answer as
    ``_item_answer`` says."""
    try:
        call()
    except DuplicateApproval as exc:
        return _item_answer(request, t, duplicate=exc)  # asks for confirmation
    except DomainError as exc:
        messages.error(request, str(exc))
        return _item_answer(request, t, **forms)
    queue = _posted_queue_query(request) if t.focus else ""
    offer = (
        _undo_offer(request, t.bank, t.item, text=done, focus=t.focus, queue=queue, target="#item-panel")
        if undo
        else None
    )
    if offer is None:
        messages.success(request, done)
        return _item_answer(request, t, decided=decided)
    return _offer_undo(request, _item_answer(request, t, decided=decided), offer)


@login_required
@post_action
def item_edit(request, bank_id, item_id):
    t = _target(request, bank_id, item_id)
    form = ItemEditForm(request.POST, instance=MemoryItem(bank=t.bank))
    if not form.is_valid():
        return _item_answer(request, t, edit_form=form)
    data = form.cleaned_data
    fields = {key: data[key] for key in ("title", "description", "content", "tags", "note")}
    edit = partial(
        services.memory_item_edit, item=t.item, author=request.user, seen_version=posted_version(request), **fields
    )
    return _act(request, t, edit, done="Saved.", decided=False, edit_form=form)


@login_required
@post_action
def item_approve(request, bank_id, item_id):
    t = _target(request, bank_id, item_id)
    confirm = request.POST.get("confirm_duplicate") == "1"
    approve = partial(
        services.memory_item_approve,
        item=t.item,
        author=request.user,
        confirm_duplicate=confirm,
        seen_version=posted_version(request),
    )
    return _act(request, t, approve, done=f"Approved “{t.item.title}”.", undo=True)


@login_required
@post_action
def item_reject(request, bank_id, item_id):
    t = _target(request, bank_id, item_id)
    form = RejectForm(request.POST)
    if not form.is_valid():
        return _item_answer(request, t, reject_form=form)
    reject = partial(
        services.memory_item_reject,
        item=t.item,
        author=request.user,
        reason=form.cleaned_data["reason"],
        seen_version=posted_version(request),
    )
    return _act(request, t, reject, done=f"Rejected “{t.item.title}”.", undo=True, reject_form=form)


@login_required
@post_action
def item_archive(request, bank_id, item_id):
    t = _target(request, bank_id, item_id)
    archive = partial(
        services.memory_item_archive, item=t.item, author=request.user, seen_version=posted_version(request)
    )
    return _act(request, t, archive, done=f"Archived “{t.item.title}”.", decided=False, undo=True)


@login_required
@post_action
def item_merge(request, bank_id, item_id):
    """Supersede this item by a near-duplicate (``into``) of the same bank."""
    t = _target(request, bank_id, item_id)
    form = MergeForm(request.POST)
    if not form.is_valid():
        return _item_answer(request, t, merge_error="Pick an item to merge into.")
    try:
        into = selectors.item_for_bank(bank=t.bank, public_id=form.cleaned_data["into"])
    except MemoryItem.DoesNotExist:
        return _item_answer(request, t, merge_error="That item is not in this bank.")
    try:
        into = services.memory_item_merge(
            item=t.item,
            into=into,
            author=request.user,
            note=form.cleaned_data["note"],
            seen_version=posted_version(request),
        )
    except DomainError as exc:
        messages.error(request, str(exc))
        return _item_answer(request, t)
    messages.success(request, f"Merged into “{into.title}”.")
    return _item_answer(request, t, decided=True)


@login_required
@post_action
def item_keep_both(request, bank_id, item_id):
    """The near-duplicate suggestion was a false alarm: clear it and approve this item as its own lesson."""
    t = _target(request, bank_id, item_id)
    keep = partial(
        services.memory_item_keep_both, item=t.item, author=request.user, seen_version=posted_version(request)
    )
    return _act(request, t, keep, done=f"Kept both; approved “{t.item.title}”.")


@login_required
@require_GET
def item_compare(request, bank_id, item_id, other_id):
    """An item and one of its near-duplicates side by side, with a word diff of their text."""
    bank, membership = bank_for_user(request, bank_id)
    item, other = _item_or_404(bank, item_id), _item_or_404(bank, other_id)
    context = {
        "bank": bank,
        "membership": membership,
        "can_write": _can_write(membership),
        "comparison": selectors.items_compare(item=item, other=other),
    }
    return render(request, "memories/item_compare.html", context)


@login_required
@post_action
def item_revert(request, bank_id, item_id):
    """Take back a decision (``decision`` = its version number): the toast's
    Undo and the Revert button of a history entry. From a queue row (htmx,
    row=1) it answers the row, proposed again; from the focus view it goes to
    the item (its filters kept) to decide again; else back to ``next`` or the
    item page."""
    t = _target(request, bank_id, item_id)
    row = bool(request.htmx and request.POST.get("row"))
    try:
        decision = int(request.POST.get("decision", "") or 0)
    except ValueError:
        decision = 0
    try:
        services.memory_item_revert(item=t.item, decision=decision, author=request.user)
    except DomainError as exc:
        if row:
            return toast(request, str(exc))
        messages.error(request, str(exc))
        if not request.htmx and request.POST.get("next"):
            return redirect(safe_next_url(request, _item_url(t.bank, t.item, focus=t.focus)))
        return _item_answer(request, t)
    done = f"Reverted: “{t.item.title}” is {t.item.get_status_display().lower()} again."
    if row:
        context = {
            **_queue_row_links(request, t.bank, [t.item], _posted_queue_query(request)),
            "bank": t.bank,
            "item": t.item,
            "can_write": True,
            "row_error": "",
            "duplicate": None,
        }
        response = render(request, "memories/review.html#row", context)
        _append_toast(request, response, {"message": done})
        return response
    messages.success(request, done)
    if t.focus:
        url = _with_query(_item_url(t.bank, t.item, focus=True), _posted_queue_query(request))
        return redirect_after_post(request, url)
    if not request.htmx and request.POST.get("next"):
        return redirect(safe_next_url(request, _item_url(t.bank, t.item, focus=False)))
    return _item_answer(request, t)


# --- all items -----------------------------------------------------------------


def _status_tabs(bank) -> list[tuple[str, str, int]]:
    counts = selectors.item_status_counts(bank=bank)
    return [("", "All", sum(counts.values()))] + [(value, label, counts[value]) for value, label in ItemStatus.choices]


@login_required
def items(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    form = ItemListFilterForm(request.GET or None)
    form.is_valid()
    data = getattr(form, "cleaned_data", {})
    status = data.get("status") or ""
    page = _page(selectors.item_list(bank=bank, status=status, text=data.get("q") or ""), request.GET.get("page"))
    detail = reverse_each("memories:item_detail", "item_id", bank_id=bank.public_id)
    for item in page.object_list:
        item.detail_url = detail(item.public_id)
    context = {
        "bank": bank,
        "membership": membership,
        "form": form,
        "page": page,
        "status": status,
        "tabs": partial(_status_tabs, bank),  # counted only when rendered: not for the htmx list partial
        "q": data.get("q") or "",
    }
    return render(request, template_for(request, "memories/items.html", {"item-list": "list"}), context)


@login_required
@require_http_methods(["GET", "POST"])
def item_create(request, bank_id):
    """Write a memory by hand (the normal way to teach a bank while no LLM is configured)."""
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    form = ItemCreateForm(request.POST or None, instance=MemoryItem(bank=bank))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            item = services.memory_item_create(
                bank=bank,
                title=data["title"],
                description=data["description"],
                content=data["content"],
                tags=data["tags"],
                author=request.user,
                status=ItemStatus.APPROVED if data["approve_now"] else ItemStatus.PROPOSED,
            )
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Saved “{item.title}” as {item.get_status_display().lower()}.")
            return redirect("memories:item_detail", bank_id=bank.public_id, item_id=item.public_id)
    return render(request, "memories/item_new.html", {"bank": bank, "membership": membership, "form": form})


@login_required
def items_export(request, bank_id):
    """The bank's items as JSON Lines (a download; ``?status=approved`` narrows it)."""
    bank, _membership = bank_for_user(request, bank_id)
    status = request.GET.get("status", "")
    if status and status not in ItemStatus.values:
        status = ""
    rows = (
        json.dumps(row, ensure_ascii=False) + "\n" for row in selectors.memory_items_export(bank=bank, status=status)
    )
    response = StreamingHttpResponse(rows, content_type="application/x-ndjson; charset=utf-8")
    name = f"{bank.team.slug}-{bank.slug}-{status or 'all'}-memories.jsonl"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def items_import(request, bank_id):
    """Upload items (another bank's export, or hand-written JSON) as proposed items for review."""
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    form = ImportForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        report = services.memory_items_import(bank=bank, author=request.user, records=form.cleaned_data["file"])
        errors = report.errors
        if not errors:
            skipped = f"; {len(report.duplicates)} already in this bank were skipped" if report.duplicates else ""
            messages.success(
                request, f"Imported {counted(len(report.created), 'item')} as proposed{skipped}. Review them here."
            )
            return redirect(reverse("memories:review", kwargs={"bank_id": bank.public_id}) + "?origin=import")
    context = {
        "bank": bank,
        "membership": membership,
        "form": form,
        "errors": errors[:50],
        "more_errors": max(0, len(errors) - 50),
    }
    return render(request, "memories/items_import.html", context)


# --- playground -----------------------------------------------------------------


@login_required
def playground(request, bank_id):
    bank, membership = bank_for_user(request, bank_id)
    form = PlaygroundForm(request.GET if "q" in request.GET else None)
    result = error = filters = None
    if form.is_bound and form.is_valid():
        filters = form.filters()
        try:
            result = services.retrieval_preview(
                bank=bank, query=form.cleaned_data["q"], k=form.cleaned_data.get("k"), filters=filters
            )
        except DomainError as exc:
            error = str(exc)
    context = {
        "bank": bank,
        "membership": membership,
        "form": form,
        "result": result,
        "error": error,
        "filters": filters,
    }
    return render(request, template_for(request, "memories/playground.html", {"results": "results"}), context)
