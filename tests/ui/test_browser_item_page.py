"""An item's page in a real headless Chromium at a laptop's 1,366×768: a
refused item offers what its lifecycle offers (Reopen, never Approve beside
it) and no empty box under its state."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memories.review.decisions import memory_item_reject
from memories.review.policy import review_policy_update
from tests import factories
from tests.ui.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Boxes in the item's panel that show nothing: no text, no control, no link.
EMPTY_BOXES = """(panel) => [...panel.querySelectorAll('div, p, section, ul, dl')]
    .filter((e) => e.offsetHeight > 0 && !e.innerText.trim() && !e.querySelector('input, button, a, select, textarea'))
    .map((e) => e.outerHTML.slice(0, 120))"""


def _signed_in(browser, live_server, user, width=1366, height=768):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    return context, page


def test_a_rejected_item_offers_reopen_not_approve_and_no_empty_box(browser, live_server, bank, owner):
    item = factories.propose_item(bank, factories.make_done_trajectory(bank), title="Always pick the first result")
    memory_item_reject(item=item, author=owner, reason="Too specific to one site")
    # The bank asks for two decisions per item since: the rejection above was taken by one.
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=2)
    context, page = _signed_in(browser, live_server, owner)
    try:
        page.goto(f"{live_server.url}/banks/{bank.public_id}/items/{item.public_id}/")
        panel = page.locator("#item-panel")
        expect(panel.locator("[data-state-label]")).to_have_text("Rejected")
        expect(panel.get_by_role("button", name="Reopen for review")).to_be_visible()
        expect(panel.locator("[data-action=approve]")).to_have_count(0)
        expect(panel.get_by_role("link", name="Edit")).to_be_visible()  # its text can still be corrected
        assert panel.evaluate(EMPTY_BOXES) == []
    finally:
        context.close()
