"""Two reviewers in two browser contexts (real Chromium) on a bank that
needs two independent decisions per item: alice approves with ``a`` and
moves on; bob does not see her decision; bob's ``a`` completes the item,
which is then approved with both decisions shown."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memories.items.models import ItemStatus
from memories.review.policy import review_policy_update
from tests import factories
from tests.ui.conftest import _login, open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_two_reviewers_decide_independently(browser, live_server, bank, owner, alice, bob):
    review_policy_update(bank=bank, actor=owner, guidelines="Approve **general** lessons.", decisions_required=2)
    item = factories.propose_item(bank, factories.make_done_trajectory(bank))
    focus = f"/banks/{bank.public_id}/review/{item.public_id}/"
    contexts = []
    try:
        alice_context, alice_page, alice_errors = open_page(browser)
        bob_context, bob_page, bob_errors = open_page(browser)
        contexts = [alice_context, bob_context]
        _login(alice_page, live_server, alice, focus)
        _login(bob_page, live_server, bob, focus)

        alice_page.locator("[data-item]").wait_for()
        alice_page.keyboard.press("a")
        alice_page.wait_for_url(f"{live_server.url}/banks/{bank.public_id}/review/")  # the last item: back to the queue
        item.refresh_from_db()
        assert item.status == ItemStatus.PROPOSED
        alice_page.goto(f"{live_server.url}{focus}")
        expect(alice_page.locator("[data-my-vote]")).to_have_text("approve")

        bob_page.reload()
        votes = bob_page.locator("[data-votes]")
        expect(votes).to_contain_text("needs 2 independent decisions")
        expect(votes).not_to_contain_text("alice")
        bob_page.keyboard.press("a")
        bob_page.wait_for_url(f"{live_server.url}/banks/{bank.public_id}/review/")
        item.refresh_from_db()
        assert item.status == ItemStatus.APPROVED

        alice_page.reload()
        expect(alice_page.locator("[data-vote]")).to_have_count(2)
        assert not alice_errors and not bob_errors
    finally:
        for context in contexts:
            context.close()
