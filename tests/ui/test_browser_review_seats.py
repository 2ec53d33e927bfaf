"""Distributed decisions in real Chromium, one browser context per reviewer.
Round-robin: an item dealt to alice and bob refuses carol's ``a`` on the page,
naming them; alice finds it under "Assigned to me", and the two of them
approve it. Claimed: bob claims from the queue's banner, and the claimed item
then refuses carol."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from memories.items.models import ItemStatus
from memories.review.policy import review_policy_update
from memories.review.policy_models import Distribution, ReviewSeat, ReviewVote
from tests import factories
from tests.ui.conftest import _login, open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def carol(team):
    return factories.make_member(team, Role.REVIEWER, user=factories.make_user("carol"))


def _open(browser):
    """``open_page`` that also collects the console's errors (a failed request, an htmx error)."""
    context, page, errors = open_page(browser)
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    return context, page, errors


def test_round_robin_items_are_decided_only_by_their_reviewers(browser, live_server, bank, owner, alice, bob, carol):
    item = factories.propose_item(bank, factories.make_done_trajectory(bank))
    review_policy_update(
        bank=bank, actor=owner, guidelines="", decisions_required=2, distribution=Distribution.ROUND_ROBIN
    )
    base = f"/banks/{bank.public_id}/review/"
    focus = f"{base}{item.public_id}/"
    contexts, errors = [], {}
    try:
        for name in ("alice", "bob", "carol"):
            context, page, errors[name] = _open(browser)
            contexts.append((context, page))
        (_, alice_page), (_, bob_page), (_, carol_page) = contexts

        # carol is not dealt the item: her `a` is refused on the page, naming who decides.
        _login(carol_page, live_server, carol, focus)
        expect(carol_page.locator("[data-seats]")).to_contain_text("Dealt to alice, bob")
        carol_page.keyboard.press("a")
        refusal = carol_page.locator("#item-panel .messages .msg-error")
        expect(refusal).to_contain_text("dealt to alice and bob: it is theirs to decide")
        assert not ReviewVote.objects.filter(item=item).exists()

        # alice's queue says one item waits for her, and "Assigned to me" lists it.
        _login(alice_page, live_server, alice, base)
        expect(alice_page.locator("[data-seats-waiting]")).to_have_text("1")
        alice_page.get_by_role("link", name="Show mine").click()
        expect(alice_page.locator(f"#item-{item.public_id}")).to_be_visible()
        alice_page.goto(f"{live_server.url}{focus}")
        alice_page.locator("[data-item]").wait_for()
        alice_page.keyboard.press("a")
        alice_page.wait_for_url(f"{live_server.url}{base}")
        expect(alice_page.locator("[data-seats-waiting]")).to_have_text("0")

        _login(bob_page, live_server, bob, focus)
        bob_page.locator("[data-item]").wait_for()
        bob_page.keyboard.press("a")
        bob_page.wait_for_url(f"{live_server.url}{base}")
        item.refresh_from_db()
        assert item.status == ItemStatus.APPROVED
        assert not any(errors.values()), errors
    finally:
        for context, _page in contexts:
            context.close()


def test_claimed_items_are_taken_from_the_queue_banner(browser, live_server, bank, owner, alice, bob, carol):
    items = [factories.propose_item(bank, title=f"Lesson {n}") for n in range(2)]
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=2, distribution=Distribution.CLAIM)
    ReviewSeat.objects.create(item=items[0], user=alice, source="claimed")
    base = f"/banks/{bank.public_id}/review/"
    contexts = []
    try:
        bob_context, bob_page, bob_errors = _open(browser)
        carol_context, carol_page, carol_errors = _open(browser)
        contexts = [bob_context, carol_context]

        _login(bob_page, live_server, bob, base)
        bob_page.locator("[data-claim-next]").click()
        expect(bob_page.locator(".messages")).to_contain_text("Claimed 2 items")
        expect(bob_page.locator("[data-seats-waiting]")).to_have_text("2")
        expect(bob_page.locator(f"#item-{items[0].public_id} [data-assignees]")).to_contain_text("alice, bob")

        # items[0] is full (alice and bob): carol is refused; items[1] has a place, which her Claim takes.
        _login(carol_page, live_server, carol, f"{base}{items[0].public_id}/")
        expect(carol_page.locator("[data-seats]")).to_contain_text("Claimed by alice, bob")
        expect(carol_page.locator("[data-claim]")).to_have_count(0)
        carol_page.keyboard.press("a")
        expect(carol_page.locator("#item-panel .messages .msg-error")).to_contain_text("claimed by alice and bob")
        carol_page.goto(f"{live_server.url}{base}{items[1].public_id}/")
        carol_page.locator("[data-claim]").click()
        expect(carol_page.locator("[data-seats]")).to_contain_text("Claimed by bob, carol")
        expect(carol_page.locator("[data-release]")).to_be_visible()
        assert not bob_errors and not carol_errors
    finally:
        for context in contexts:
            context.close()
