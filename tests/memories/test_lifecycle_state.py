"""An item's lifecycle, one function for every page: the state that leads,
its reason and the decisions open to a reviewer, for every state an item
can be in, read from real rows; and the list form reads them in one query."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memories.items.lifecycle import ItemState, item_lifecycle, items_lifecycle, lifecycle_annotations
from memories.items.models import ItemStatus, MemoryItem
from memories.learning.policy import bank_learning_update
from memories.learning.refusals import memory_item_archive_as_wrong
from memories.learning.retirement import ItemEffect, memory_item_supersede_with, memory_items_outcomes_record
from memories.releases.models import PublishMode
from memories.releases.publishing import release_mode_set, release_publish
from memories.review.decisions import memory_item_approve, memory_item_archive, memory_item_merge, memory_item_reject
from tests.factories import make_done_trajectory, make_items, propose_item

HURTS = {"served_rate": 0.3, "withheld_rate": 0.7, "served_judged": 40, "withheld_judged": 38, "difference": -0.4}


def _approved(bank, owner, title, content):
    return memory_item_approve(
        item=propose_item(bank, title=title, content=content), author=owner, confirm_duplicate=True
    )


def _hurts(bank, item):
    memory_items_outcomes_record(
        bank=bank, effects=[ItemEffect(str(item.public_id), -0.4, 78, hurts=True, evidence=HURTS)]
    )
    item.refresh_from_db()
    return item


def _state(bank, item):
    item.refresh_from_db()
    return item_lifecycle(bank=bank, item=item)


def test_a_proposed_item_waits_for_a_decision(bank):
    lc = _state(bank, propose_item(bank))
    assert (lc.state, lc.label) == (ItemState.PROPOSED, "Proposed")
    assert lc.reason == ""  # waiting in the queue needs no why
    assert lc.actions[:2] == ("approve", "reject") and "keep" not in lc.actions
    assert not lc.in_production and lc.not_served == ""


def test_an_approved_item_says_whether_production_serves_it(bank, owner):
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    published = _approved(bank, owner, "Published lesson", "One lesson.")
    release_publish(bank=bank, actor=owner)
    waiting = _approved(bank, owner, "Waiting lesson", "Another lesson entirely.")

    served = _state(bank, published)
    assert (served.state, served.label, served.in_production) == ("approved", "Approved · in production", True)
    assert served.reason == "Served to agents from production (release 1)." and served.not_served == ""
    assert served.actions == ("archive", "supersede", "archive-wrong")

    pending = _state(bank, waiting)
    assert (pending.state, pending.label, pending.in_production) == (
        "approved",
        "Approved · not yet in production",
        False,
    )
    assert pending.not_served.startswith("Not served: production (release 1) does not hold it yet.")


def test_an_item_proposed_for_retirement_leads_with_it_and_offers_to_keep_it(bank, owner):
    item = _hurts(bank, _approved(bank, owner, "Sign in first", "Log in before listing orders."))
    lc = _state(bank, item)
    assert (lc.state, lc.label) == (ItemState.RETIREMENT, "Proposed for retirement")
    assert lc.reason == item.retirement_reason and "hurt" in lc.reason.lower()
    assert lc.actions[0] == "keep" and "archive" in lc.actions and lc.flags == ("retirement",)
    assert lc.in_production


def test_a_suspended_item_is_suspended_not_approved(bank, owner):
    bank_learning_update(bank=bank, actor=owner, suspend_when_hurting=True)
    item = _hurts(bank, _approved(bank, owner, "Sign in first", "Log in before listing orders."))
    assert item.suspended
    lc = _state(bank, item)
    assert (lc.state, lc.label) == (ItemState.SUSPENDED, "Suspended")
    assert lc.reason == f"Proposed for retirement: {item.retirement_reason}"
    assert lc.not_served == "Not served: suspended until a reviewer decides on its retirement."
    assert lc.actions[0] == "keep" and not lc.in_production


def test_an_expired_item_and_a_stale_one(bank, owner):
    expired = _approved(bank, owner, "Type dates", "Type YYYY-MM-DD.")
    MemoryItem.objects.filter(pk=expired.pk).update(valid_until=timezone.now() - timedelta(days=1))
    stale = _approved(bank, owner, "Export as CSV", "Use the export menu.")
    MemoryItem.objects.filter(pk=stale.pk).update(stale_reason="site_version is now '4' (learnt under '3')")

    lc = _state(bank, expired)
    assert (lc.state, lc.label, lc.in_production) == (ItemState.EXPIRED, "Expired", False)
    assert lc.reason.startswith("Past its validity since ") and lc.actions[0] == "validity"
    assert lc.not_served == "Not served: past its validity."

    lc = _state(bank, stale)
    assert (lc.state, lc.label, lc.reason) == (ItemState.STALE, "Stale", "site_version is now '4' (learnt under '3')")
    assert lc.actions[0] == "still-holds" and lc.in_production  # stale is a warning: it is still served


def test_a_refused_item_gives_the_reviewers_reason_and_whether_it_was_seen_again(bank, owner, trajectory):
    rejected = propose_item(bank, trajectory, title="Prefer the official source")
    memory_item_reject(item=rejected, author=owner, reason="Official pages are out of date.")
    lc = _state(bank, rejected)
    assert (lc.state, lc.label, lc.reason) == (ItemState.REFUSED, "Rejected", "Official pages are out of date.")
    assert lc.actions == ("reopen",) and not lc.repeats  # back through the queue, never straight to serving

    propose_item(bank, make_done_trajectory(bank), title="Prefer official sources")  # the same lesson again
    lc = _state(bank, rejected)
    assert lc.repeats and lc.flags == ("repeated",)

    wrong = _approved(bank, owner, "Call the shop", "Phone them before you go.")
    memory_item_archive_as_wrong(item=wrong, author=owner, reason="The shop has no phone.")
    lc = _state(bank, wrong)
    assert (lc.state, lc.label, lc.reason) == (ItemState.REFUSED, "Archived as wrong", "The shop has no phone.")
    assert lc.actions == ("reopen",)


def test_an_archived_item_can_only_be_approved_again(bank, owner):
    item = memory_item_archive(item=_approved(bank, owner, "Old lesson", "Old text."), author=owner)
    lc = _state(bank, item)
    assert (lc.state, lc.label, lc.actions) == (ItemState.ARCHIVED, "Archived", ("approve",))


def test_an_approved_item_flagged_for_review_offers_to_approve_it_again(bank, owner):
    item = _approved(bank, owner, "Flagged lesson", "Some text.")
    assert "approve" not in _state(bank, item).actions
    MemoryItem.objects.filter(pk=item.pk).update(needs_review_reason="New risk findings.")
    assert _state(bank, item).actions[0] == "approve"


def test_a_merged_item_names_the_item_it_was_merged_into(bank, owner):
    kept = _approved(bank, owner, "Book by phone", "Call the restaurant.")
    twin = propose_item(bank, title="Book tables by phone", content="Call the restaurant first.")
    memory_item_merge(item=twin, into=kept, author=owner)
    lc = _state(bank, twin)
    assert (lc.state, lc.label, lc.actions) == (ItemState.MERGED, "Merged", ())
    assert lc.merged_into.public_id == kept.public_id and lc.merged_into.title == kept.title


def test_a_superseded_item_names_its_replacement(bank, owner):
    old = _approved(bank, owner, "Old way", "Use the old form.")
    new = _approved(bank, owner, "Search the archive", "The archive search finds past invoices by number.")
    memory_item_supersede_with(item=old, replacement=new, author=owner)
    lc = _state(bank, old)
    assert (lc.state, lc.label, lc.actions) == (ItemState.SUPERSEDED, "Superseded", ())
    assert lc.merged_into.public_id == new.public_id


def test_the_list_form_reads_every_state_in_one_query(bank, django_assert_num_queries):
    items = make_items(bank, 6)
    MemoryItem.objects.filter(pk=items[0].pk).update(stale_reason="site_version changed")
    make_items(bank, 1, status=ItemStatus.REJECTED, status_reason="no")
    rows = list(MemoryItem.objects.filter(bank=bank).order_by("id"))
    with django_assert_num_queries(1):
        states = items_lifecycle(bank=bank, items=rows)
    assert [states[r.pk].state for r in rows] == ["stale", *["approved"] * 5, "refused"]
    # The same answer from a list's own query, annotated:
    annotated = MemoryItem.objects.filter(bank=bank).annotate(**lifecycle_annotations(bank=bank)).order_by("id")
    assert [r.served for r in annotated] == [True] * 6 + [False]
