"""An item's page leads with its state, in a real headless Chromium on a
laptop screen: a suspended item seen again 80 times shows "Suspended", the
retirement proposal's reason and its decisions on the first screen, and its
"Seen again" list folded after a few entries."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from memories.items.models import MemoryItemSupport, SupportKind
from memories.learning.policy import bank_learning_update
from memories.learning.retirement import ItemEffect, memory_items_outcomes_record
from memories.review.decisions import memory_item_approve
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREEN = {"width": 1366, "height": 768}


@pytest.fixture
def suspended(bank, owner):
    item = memory_item_approve(item=factories.propose_item(bank, title="Sign in before listing orders"), author=owner)
    bank_learning_update(bank=bank, actor=owner, suspend_when_hurting=True)
    memory_items_outcomes_record(bank=bank, effects=[ItemEffect(str(item.public_id), -0.4, 78, hurts=True)])
    MemoryItemSupport.objects.bulk_create(
        MemoryItemSupport(item=item, kind=SupportKind.DISTILLED, title=f"Sign in first ({i})", similarity=0.97)
        for i in range(80)
    )
    item.refresh_from_db()
    assert item.suspended and item.retirement_reason
    return item


@pytest.mark.parametrize("path", ["review", "items"], ids=["focus view", "item page"])
def test_a_suspended_item_leads_with_its_state_reason_and_decisions(page, live_server, login, bank, suspended, path):
    reviewer = factories.make_member(bank.team, Role.REVIEWER)
    page.set_viewport_size(SCREEN)
    login(page, live_server, reviewer, f"/banks/{bank.public_id}/{path}/{suspended.public_id}/")

    state = page.locator("[data-item-state]")
    expect(state.locator("[data-state-label]")).to_have_text("Suspended")
    expect(state).to_contain_text("Proposed for retirement")
    expect(state).to_contain_text(suspended.retirement_reason)
    keep = state.get_by_role("button", name="Keep in service")
    archive = page.locator("[data-action=archive] button")
    for element in (state.locator("[data-state-label]"), keep, archive):
        box = element.bounding_box()
        assert box is not None and box["y"] + box["height"] <= SCREEN["height"], element

    supports = page.locator("[data-supports] > li")
    expect(supports).to_have_count(5)
    more = page.locator("[data-supports-more]")
    expect(more.locator(":scope > summary")).to_have_text("Show all 80")
    expect(more.locator(":scope > ul > li").first).to_be_hidden()
    more.locator(":scope > summary").click()
    expect(more.locator(":scope > ul > li")).to_have_count(75)
    expect(more.locator(":scope > ul > li").first).to_be_visible()
