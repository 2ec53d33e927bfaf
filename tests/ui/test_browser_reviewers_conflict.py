"""Two reviewers who disagree, in separate browser contexts (real Chromium),
on a bank that needs two independent decisions per item: alice approves with
``a``; bob, who does not see her decision, rejects with ``r``, a reason and
Enter. The item stays proposed, marked as a conflict, and both reviewers now
see both decisions; a second vote is refused on the page. The owner finds it
under the queue's "Reviewers disagree" filter, reads both decisions and
settles it (``a``, or ``r`` with a reason); it then leaves that filter's list
and no longer says it waits for an owner."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from memories.items.models import ItemStatus
from memories.review.policy import review_policy_update
from memories.review.policy_models import ReviewVote
from memories.review.selectors import REVIEWERS_DISAGREE
from memories.review.votes import review_vote_cast
from tests import factories
from tests.ui.conftest import _login, open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BOB_REASON = "Too specific to one library's website."


def _open(browser):
    """``open_page`` that also collects the console's errors (a failed request, an htmx error) with the page's."""
    context, page, errors = open_page(browser)
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    return context, page, errors


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_reviewers_disagree_and_the_owner_decides(browser, live_server, bank, owner, alice, bob, decision):
    review_policy_update(bank=bank, actor=owner, guidelines="Approve **general** lessons.", decisions_required=2)
    item = factories.propose_item(bank, factories.make_done_trajectory(bank))
    base = f"/banks/{bank.public_id}"
    focus, queue = f"{base}/review/{item.public_id}/", f"{base}/review/"
    contexts, errors = [], {}
    try:
        alice_context, alice_page, errors["alice"] = _open(browser)
        bob_context, bob_page, errors["bob"] = _open(browser)
        owner_context, owner_page, errors["owner"] = _open(browser)
        contexts = [alice_context, bob_context, owner_context]

        # alice approves: a hidden vote; the focus view moves on (to the queue: it was the last item).
        _login(alice_page, live_server, alice, focus)
        alice_page.locator("[data-item]").wait_for()
        alice_page.keyboard.press("a")
        alice_page.wait_for_url(f"{live_server.url}{queue}")
        expect(alice_page.locator(".messages")).to_contain_text("Your decision (approve) is recorded")

        # bob does not see it, and rejects from the keyboard: r puts the cursor in the reason, Enter sends it.
        _login(bob_page, live_server, bob, focus)
        votes = bob_page.locator("[data-votes]")
        expect(votes).to_contain_text("needs 2 independent decisions")
        expect(votes).not_to_contain_text("alice")
        expect(votes.locator("[data-vote]")).to_have_count(0)
        bob_page.keyboard.press("r")
        reason = bob_page.locator("#reject [name=reason]")
        expect(reason).to_be_focused()
        bob_page.keyboard.type(BOB_REASON)
        bob_page.keyboard.press("Enter")
        bob_page.wait_for_url(f"{live_server.url}{queue}")
        expect(bob_page.locator(".messages")).to_contain_text("The reviewers disagree on this item")

        item.refresh_from_db()
        assert item.status == ItemStatus.PROPOSED
        assert item.needs_review_reason.startswith(REVIEWERS_DISAGREE)

        # All decisions are in: each reviewer now sees both, with bob's reason.
        bob_page.goto(f"{live_server.url}{focus}")
        expect(bob_page.locator("[data-votes] [data-vote]")).to_have_count(2)
        expect(bob_page.locator("[data-votes]")).to_contain_text("alice: approve")
        expect(bob_page.locator("[data-votes]")).to_contain_text(f"bob: reject — {BOB_REASON}")
        expect(bob_page.locator("[data-item]")).to_contain_text(REVIEWERS_DISAGREE)
        alice_page.goto(f"{live_server.url}{focus}")
        expect(alice_page.locator("[data-votes] [data-vote]")).to_have_count(2)
        expect(alice_page.locator("[data-votes]")).to_contain_text(f"bob: reject — {BOB_REASON}")

        # A second vote is refused on the page, and changes nothing.
        alice_page.keyboard.press("a")
        # (test_a_second_vote_on_a_conflict_is_refused_for_what_it_is holds the refusal's wording)
        expect(alice_page.locator("#item-panel .messages .msg-error")).to_contain_text(re.compile("decided|decisions"))
        assert alice_page.url == f"{live_server.url}{focus}"
        item.refresh_from_db()
        assert item.status == ItemStatus.PROPOSED and item.needs_review_reason.startswith(REVIEWERS_DISAGREE)
        assert sorted(ReviewVote.objects.filter(item=item).values_list("user__username", "decision")) == [
            ("alice", "approve"),
            ("bob", "reject"),
        ]

        # The owner: the conflict filter lists this item only (not another proposed one).
        other = factories.propose_item(
            bank, title="Retry a flaky login once", description="When a login form times out.", content="Retry once."
        )
        _login(owner_page, live_server, owner, f"{queue}?conflict=on")
        rows = owner_page.locator("[data-rows] [data-row]")
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_id(f"item-{item.public_id}")
        expect(owner_page.locator("[data-queue-count]")).to_have_text("1 proposed")
        owner_page.goto(f"{live_server.url}{queue}")
        expect(owner_page.locator("[data-rows] [data-row]")).to_have_count(2)  # the filter is what narrowed it
        owner_page.goto(f"{live_server.url}{queue}?conflict=on")
        owner_page.keyboard.press("j")
        owner_page.keyboard.press("Enter")
        owner_page.wait_for_url(re.compile(re.escape(f"{live_server.url}{focus}") + r"\?.*conflict=on"))
        owner_votes = owner_page.locator("[data-votes]")
        expect(owner_votes.locator("[data-vote]")).to_have_count(2)
        expect(owner_votes).to_contain_text("alice: approve")
        expect(owner_votes).to_contain_text(f"bob: reject — {BOB_REASON}")
        # Owners decide outright, with the same keys.
        if decision == "approve":
            owner_page.keyboard.press("a")
        else:
            owner_page.keyboard.press("r")
            owner_page.keyboard.type("Bob is right: too specific.")
            owner_page.keyboard.press("Enter")
        owner_page.wait_for_url(re.compile(re.escape(f"{live_server.url}{queue}") + r"\?.*conflict=on"))
        expect(owner_page.locator("[data-rows] [data-row]")).to_have_count(0)
        expect(owner_page.locator("[data-queue-count]")).to_have_text("0 proposed")

        item.refresh_from_db()
        assert item.status == (ItemStatus.APPROVED if decision == "approve" else ItemStatus.REJECTED)
        assert item.needs_review_reason == ""
        # Decided: the item no longer says it waits for an owner or admin.
        alice_page.reload()
        expect(alice_page.locator("[data-item]")).to_have_attribute("data-status", item.status)
        expect(alice_page.locator("[data-item]")).not_to_contain_text(REVIEWERS_DISAGREE)
        expect(alice_page.locator("[data-votes] [data-vote]")).to_have_count(2)
        other.refresh_from_db()
        assert other.status == ItemStatus.PROPOSED
        assert errors == {"alice": [], "bob": [], "owner": []}
    finally:
        for context in contexts:
            context.close()


def test_a_second_vote_on_a_conflict_is_refused_for_what_it_is(browser, live_server, bank, owner, alice, bob):
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=2)
    item = factories.propose_item(bank, factories.make_done_trajectory(bank))
    review_vote_cast(item=item, author=alice, decision="approve")
    review_vote_cast(item=item, author=bob, decision="reject", reason=BOB_REASON)
    focus = f"/banks/{bank.public_id}/review/{item.public_id}/"
    context, page, errors = _open(browser)
    try:
        _login(page, live_server, alice, focus)
        page.keyboard.press("a")
        refusal = page.locator("#item-panel .messages .msg-error")
        expect(refusal).to_contain_text("an owner or admin resolves it")
        expect(refusal).not_to_contain_text("still to come")
        assert not errors
    finally:
        context.close()
