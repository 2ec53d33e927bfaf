"""The actions of the item page (edit, approve, reject, archive, merge, keep
both, revert): one POST-only view each. From the focus view (the forms post
focus=1) a decision moves on to the next item of the queue."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django_htmx.http import reswap

from accounts.access import bank_for_user
from accounts.models import Role
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_edit
from memories.releases.models import PublishMode
from memories.releases.selectors import bank_releasing
from memories.review.decisions import (
    memory_item_approve,
    memory_item_archive,
    memory_item_keep_both,
    memory_item_merge,
    memory_item_reject,
)
from memories.review.forms import ItemEditForm, MergeForm, RejectForm
from memories.review.policy_models import VoteDecision
from memories.review.reverts import memory_item_revert
from memories.review.selectors import item_for_bank
from memories.review.views.decisions import (
    append_toast,
    offer_undo,
    posted_queue_query,
    posted_risk_confirmation,
    posted_version,
    queue_filters,
    undo_offer,
    with_query,
)
from memories.review.views.item import ITEM_TEMPLATE, item_context, item_or_404, item_url, queue_neighbours
from memories.review.views.queue import ROW_TEMPLATE, queue_row_links
from memories.review.votes import review_vote_cast, votes_needed
from reasoningbank_site.errors import DomainError, DuplicateApproval, RisksNeedConfirmation
from reasoningbank_site.security import safe_next_url
from reasoningbank_site.values import ascii_number
from reasoningbank_site.views_helpers import htmx_template, post_action, redirect_after_post, toast


class _Target(NamedTuple):
    bank: object
    membership: object
    item: MemoryItem
    focus: bool  # posted from the focus view (the forms say so with focus=1)


def _target(request, bank_id, item_id) -> _Target:
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    return _Target(bank, membership, item_or_404(bank, item_id), request.POST.get("focus") == "1")


def _item_answer(
    request,
    t: _Target,
    *,
    decided=False,
    edit_form=None,
    reject_form=None,
    merge_error="",
    duplicate=None,
    risks=None,
):
    """How an item action answers. In the focus view a decision moves on to
    the next item of the queue (or the queue when none is left). Otherwise
    back to the item: its panel for htmx, the page with the form and its
    errors, or a redirect to the page."""
    if decided and t.focus:
        queue = posted_queue_query(request)
        _, following = queue_neighbours(t.bank, t.item, queue_filters(t.bank, queue))
        target = (
            item_url(t.bank, following, focus=True)
            if following
            else reverse("memories:review", kwargs={"bank_id": t.bank.public_id})
        )
        return redirect_after_post(request, with_query(target, queue))
    asking = duplicate is not None or risks is not None
    if edit_form is None and reject_form is None and not merge_error and not asking and not request.htmx:
        return redirect(item_url(t.bank, t.item, focus=t.focus))
    t.item.refresh_from_db()
    context = item_context(
        request,
        t.bank,
        t.membership,
        t.item,
        focus=t.focus,
        edit_form=edit_form,
        reject_form=reject_form,
        merge_error=merge_error,
        duplicate=duplicate,
        risks=risks,
    )
    return render(request, htmx_template(request, ITEM_TEMPLATE, "panel"), context)


def _act(request, t: _Target, call, *, done, decided: bool = True, undo: bool = False, **forms):
    """Run an item action's service ``call`` (a ``partial``): a refusal becomes an error
    message (``forms`` are shown again with what was typed), success the
    ``done`` message (or ``done(result)``, when it depends on what the service returned) — in the
    toast with an Undo button when ``undo`` and the action decided something that can be taken back;
    then answer as ``_item_answer`` says."""
    try:
        result = call()
    except DuplicateApproval as exc:
        return _item_answer(request, t, duplicate=exc)  # asks for confirmation
    except RisksNeedConfirmation as exc:
        return _item_answer(request, t, risks=exc)  # asks for confirmation
    except DomainError as exc:
        messages.error(request, str(exc))
        return _item_answer(request, t, **forms)
    if callable(done):
        done = done(result)
    queue = posted_queue_query(request) if t.focus else ""
    offer = (
        undo_offer(request, t.bank, t.item, text=done, focus=t.focus, queue=queue, target="#item-panel")
        if undo
        else None
    )
    if offer is None:
        messages.success(request, done)
        return _item_answer(request, t, decided=decided)
    return offer_undo(request, _item_answer(request, t, decided=decided), offer)


@login_required
@post_action
def item_edit(request, bank_id, item_id):
    t = _target(request, bank_id, item_id)
    form = ItemEditForm(request.POST, instance=MemoryItem(bank=t.bank))
    if not form.is_valid():
        return _item_answer(request, t, edit_form=form)
    data = form.cleaned_data
    fields = {key: data[key] for key in ("title", "description", "content", "tags", "note")}
    edit = partial(memory_item_edit, item=t.item, author=request.user, seen_version=posted_version(request), **fields)
    before = t.item.updated_at
    done = partial(_saved, t, before=before)
    response = _act(request, t, edit, done=done, decided=False, edit_form=form)
    if request.htmx and response.status_code == 200 and not response.has_header("HX-Redirect"):
        # The answer's message heads the item, near the page's top, and the Save button was far below it:
        # back to the top (below the sticky bar, however tall it wraps), where the message is in view.
        return reswap(response, "outerHTML show:window:top")
    return response


def _saved(t: _Target, item: MemoryItem, *, before) -> str:
    """What saving ``item`` (last updated at ``before``) did: nothing, when nothing changed; for an
    approved item, when agents get the edit: now (automatic publishing) or after the next "Publish
    release" (manual)."""
    if item.updated_at == before:
        return "No change to save."
    if item.status != ItemStatus.APPROVED:
        return "Saved."
    manual = bank_releasing(bank=t.bank).mode == PublishMode.MANUAL
    return render_to_string("memories/includes/item_saved.html", {"bank": t.bank, "manual": manual})


@login_required
@post_action
def item_approve(request, bank_id, item_id):
    t = _target(request, bank_id, item_id)
    confirm = request.POST.get("confirm_duplicate") == "1"
    risks = posted_risk_confirmation(request)
    if votes_needed(bank=t.bank, membership=t.membership):
        return _vote(request, t, VoteDecision.APPROVE, confirm=confirm, confirm_risks=risks)
    approve = partial(
        memory_item_approve,
        item=t.item,
        author=request.user,
        confirm_duplicate=confirm,
        confirm_risks=risks,
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
    if votes_needed(bank=t.bank, membership=t.membership):
        return _vote(request, t, VoteDecision.REJECT, reason=form.cleaned_data["reason"])
    reject = partial(
        memory_item_reject,
        item=t.item,
        author=request.user,
        reason=form.cleaned_data["reason"],
        seen_version=posted_version(request),
    )
    return _act(request, t, reject, done=f"Rejected “{t.item.title}”.", undo=True, reject_form=form)


def _vote(request, t: _Target, decision: str, *, reason: str = "", confirm: bool = False, confirm_risks=False):
    """A decision under a policy of several (memories.review.votes): recorded, hidden from the
    others; the focus view moves on as after any decision."""
    try:
        outcome = review_vote_cast(
            item=t.item,
            author=request.user,
            decision=decision,
            reason=reason,
            confirm_duplicate=confirm,
            confirm_risks=confirm_risks,
        )
    except DuplicateApproval as exc:
        return _item_answer(request, t, duplicate=exc)
    except RisksNeedConfirmation as exc:
        return _item_answer(request, t, risks=exc)
    except DomainError as exc:
        messages.error(request, str(exc))
        return _item_answer(request, t)
    if outcome.applied:
        messages.success(request, f"All {outcome.required} reviewers agreed: “{t.item.title}” is {decision}d.")
    elif outcome.conflict:
        messages.warning(request, "The reviewers disagree on this item: an owner or admin will decide.")
    elif outcome.unconfirmed:
        who = " and ".join(outcome.unconfirmed)
        messages.warning(request, f"All approved, but risk findings appeared since: {who} must approve again.")
    else:
        messages.success(
            request,
            f"Your decision ({decision}) is recorded; {outcome.waiting} more reviewer"
            f"{'s' if outcome.waiting != 1 else ''} to decide. The others do not see it until then.",
        )
    return _item_answer(request, t, decided=True)


@login_required
@post_action
def item_archive(request, bank_id, item_id):
    t = _target(request, bank_id, item_id)
    archive = partial(memory_item_archive, item=t.item, author=request.user, seen_version=posted_version(request))
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
        into = item_for_bank(bank=t.bank, public_id=form.cleaned_data["into"])
    except MemoryItem.DoesNotExist:
        return _item_answer(request, t, merge_error="That item is not in this bank.")
    try:
        into = memory_item_merge(
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
    keep = partial(memory_item_keep_both, item=t.item, author=request.user, seen_version=posted_version(request))
    return _act(request, t, keep, done=f"Kept both; approved “{t.item.title}”.")


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
    decision = ascii_number(request.POST.get("decision", "")) or 0
    try:
        memory_item_revert(item=t.item, decision=decision, author=request.user)
    except DomainError as exc:
        if row:
            return toast(request, str(exc))
        messages.error(request, str(exc))
        if not request.htmx and request.POST.get("next"):
            return redirect(safe_next_url(request, item_url(t.bank, t.item, focus=t.focus)))
        return _item_answer(request, t)
    done = f"Reverted: “{t.item.title}” is {t.item.get_status_display().lower()} again."
    if row:
        context = {
            **queue_row_links(request, t.bank, [t.item], posted_queue_query(request)),
            "bank": t.bank,
            "item": t.item,
            "can_write": True,
            "row_error": "",
            "duplicate": None,
        }
        response = render(request, ROW_TEMPLATE, context)
        append_toast(request, response, {"message": done})
        return response
    messages.success(request, done)
    if t.focus:
        url = with_query(item_url(t.bank, t.item, focus=True), posted_queue_query(request))
        return redirect_after_post(request, url)
    if not request.htmx and request.POST.get("next"):
        return redirect(safe_next_url(request, item_url(t.bank, t.item, focus=False)))
    return _item_answer(request, t)
