"""Two reviewers on one queue in a real headless Chromium, each in a browser
context of their own (two sessions): bob opens an item in the focus view and
alice sees "being reviewed by bob"; alice rejects it; bob approves on his
stale page and sees alice's rejection instead of silently winning; then a
comment written in one session is read in the other."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_create
from tests.ui.conftest import open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def second_page(browser):
    """Another browser context (its own cookies: another session) and its page."""
    context, page, errors = open_page(browser)
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the second page: {errors}"


def test_the_stale_reviewer_sees_the_other_decision(page, second_page, live_server, login, bank, owner, alice, bob):
    item = memory_item_create(
        bank=bank,
        title="Check the coupon before paying",
        description="Use when a checkout offers a coupon field.",
        content="Apply the coupon and confirm the total dropped before submitting the order.",
        author=owner,
    )
    focus = f"/banks/{bank.public_id}/review/{item.public_id}/"
    queue = f"/banks/{bank.public_id}/review/"

    # Bob opens the item in the focus view; its first heartbeat says so.
    with second_page.expect_response(lambda r: r.url.endswith("/presence/") and r.status == 200):
        login(second_page, live_server, bob, focus)
    expect(second_page.locator("#presence [data-presence]")).to_have_count(0)  # his own presence is not shown to him

    login(page, live_server, alice, queue)
    expect(page.locator(f"#item-{item.public_id} [data-presence]")).to_have_text("being reviewed by bob")

    # Alice opens it too (she sees bob there), and rejects it.
    page.goto(f"{live_server.url}{focus}")
    expect(page.locator("#presence [data-presence]")).to_have_text("being reviewed by bob")
    page.fill("#reject input[name=reason]", "says nothing the agent does not know")
    page.click("#reject button[type=submit]")
    page.wait_for_url(re.compile(re.escape(queue) + r"$"))
    assert MemoryItem.objects.get(pk=item.pk).status == ItemStatus.REJECTED

    # Bob, still on the page as it was, approves: refused, with alice's decision and the item's state now.
    second_page.click("#item-panel form[data-action=approve] button[type=submit]")
    panel = second_page.locator("#item-panel")
    expect(panel).to_contain_text("Rejected by alice")
    expect(panel).to_contain_text("says nothing the agent does not know")
    expect(panel).to_contain_text("your decision was not applied")
    expect(panel.locator(".badge.rejected").first).to_have_text("Rejected")
    assert MemoryItem.objects.get(pk=item.pk).status == ItemStatus.REJECTED

    # Bob leaves a comment on the item; alice reads it on the item page.
    second_page.fill("#comments textarea[name=body]", "Rejected twice now: the checkout lessons need an owner.")
    second_page.click("#comments button[type=submit]")
    expect(second_page.locator("#comments [data-comment]")).to_contain_text("need an owner")
    page.goto(f"{live_server.url}/banks/{bank.public_id}/items/{item.public_id}/")
    expect(page.locator("#comments [data-comment]")).to_contain_text("bob")
    expect(page.locator("#comments [data-comment]")).to_contain_text("need an owner")
