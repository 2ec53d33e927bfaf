"""An item's page in a real headless Chromium at a laptop's 1,366×768: a
refused item offers what its lifecycle offers (Reopen, never Approve beside
it) and no empty box under its state; saving an edit of an approved item
brings "Saved." into view and says when agents get the edit (at once, or
after "Publish release" when the bank publishes by hand)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Team
from memories.items.models import MemoryItemSupport, SupportKind
from memories.items.services import memory_item_edit
from memories.releases.publishing import release_mode_set
from memories.review.decisions import memory_item_approve, memory_item_reject
from memories.review.policy import review_policy_update
from tests import factories
from tests.ui.conftest import signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Boxes in the item's panel that show nothing: no text, no control, no link.
EMPTY_BOXES = """(panel) => [...panel.querySelectorAll('div, p, section, ul, dl')]
    .filter((e) => e.offsetHeight > 0 && !e.innerText.trim() && !e.querySelector('input, button, a, select, textarea'))
    .map((e) => e.outerHTML.slice(0, 120))"""


def test_a_rejected_item_offers_reopen_not_approve_and_no_empty_box(browser, live_server, bank, owner):
    item = factories.propose_item(bank, factories.make_done_trajectory(bank), title="Always pick the first result")
    memory_item_reject(item=item, author=owner, reason="Too specific to one site")
    # The bank asks for two decisions per item since: the rejection above was taken by one.
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=2)
    context, page = signed_in(browser, live_server, owner)
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


def _approved_item(bank, owner):
    """An approved item as a walkthrough meets it: edited twice, so its page has a history below the text."""
    item = factories.propose_item(
        bank,
        factories.make_done_trajectory(bank),
        title="Confirm a form submission from the page, not from the click",
        description="Use after submitting any web form; do not use for forms that only save drafts.",
        content="After submitting, read the page for a confirmation message or reference number. " * 3,
    )
    memory_item_edit(item=item, author=owner, content=item.content + " Look for inline validation errors.")
    memory_item_approve(item=item, author=owner, confirm_duplicate=True)
    memory_item_edit(item=item, author=owner, tags=["forms", "checkout"])
    return item


def _save_an_edit(page, live_server, bank, item, height):
    page.goto(f"{live_server.url}/banks/{bank.public_id}/items/{item.public_id}/")
    page.locator("[data-action=edit]").click()
    page.locator("#edit-form textarea[name=content]").fill("Read the page for a confirmation before reporting success.")
    save = page.locator("#edit-form button[type=submit]")
    save.scroll_into_view_if_needed()
    assert page.evaluate("window.scrollY") > 0  # the Save button sits below the fold: the page had to scroll
    save.click()
    saved = page.locator("#item-panel .messages")
    expect(saved).to_contain_text("Saved.")
    page.wait_for_timeout(300)  # htmx's scroll after the swap
    header = page.evaluate("document.querySelector('header.topbar').getBoundingClientRect().bottom")
    box = saved.bounding_box()
    assert box is not None and header - 1 <= box["y"] and box["y"] + box["height"] <= height, (box, header)
    return saved


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
@pytest.mark.parametrize("mode", ["manual", "automatic"])
def test_saving_an_approved_items_edit_shows_saved_in_view_and_when_agents_get_it(
    browser, live_server, bank, owner, mode, width, height
):
    release_mode_set(bank=bank, mode=mode, actor=owner)
    Team.objects.filter(pk=bank.team_id).update(name="Checkout-flow evaluation agents")  # a top bar that wraps
    item = _approved_item(bank, owner)
    context, page = signed_in(browser, live_server, owner, width, height)
    try:
        saved = _save_an_edit(page, live_server, bank, item, height)
        if mode == "manual":
            expect(saved).to_contain_text("in the next release draft")
            link = saved.get_by_role("link", name="Publish release")
            expect(link).to_have_attribute("href", f"/banks/{bank.public_id}/releases/")
        else:
            expect(saved).to_contain_text("agents get the new text now")
            expect(saved.get_by_role("link")).to_have_count(0)
    finally:
        context.close()


@pytest.fixture
def reviewed(bank, owner):
    """A proposed item as the focus view meets it: judged against the agent's claim, seen again in eight
    later runs, edited three times."""
    trajectory = factories.make_done_trajectory(bank, outcome="failure", verdict="")
    factories.record_verdict(trajectory, "success", rationale="Status: success. The answer matches the site.")
    item = factories.propose_item(
        bank,
        trajectory,
        title="Confirm a form submission from the page, not from the click",
        description="Use after submitting any web form; do not use for forms that only save drafts.",
        content="After submitting, read the page for a confirmation message or reference number. " * 3,
    )
    MemoryItemSupport.objects.bulk_create(
        MemoryItemSupport(item=item, kind=SupportKind.DISTILLED, title=f"Check the confirmation ({i})", similarity=0.93)
        for i in range(8)
    )
    for n in range(3):
        memory_item_edit(item=item, author=owner, content=f"{item.content} Step {n}.", note=f"edit {n}")
    return item


def _tops(page, selectors: dict[str, str]) -> dict[str, float]:
    """Where each element starts, in px from the top of the page."""
    return {
        name: page.locator(selector).first.evaluate("(e) => e.getBoundingClientRect().top + window.scrollY")
        for name, selector in selectors.items()
    }


FOCUS_PARTS = {
    "item": "#item-panel h1.itemtitle",
    "claim": "#evidence [data-claimed]",
    "verdict": "#evidence [data-verdict]",
    "rationale": "#evidence [data-rationale]",
    "seen again": "#support",
    "history": "ol.history",
}


def test_on_a_phone_the_focus_view_shows_the_item_then_its_verdict_and_rationale(
    browser, live_server, bank, owner, reviewed
):
    context, page = signed_in(browser, live_server, owner, 390, 844)
    try:
        page.goto(f"{live_server.url}/banks/{bank.public_id}/review/{reviewed.public_id}/")
        page.locator("#evidence [data-rationale]").wait_for()
        tops = _tops(page, FOCUS_PARTS)
        assert list(tops) == sorted(tops, key=tops.get), tops  # item, claim, verdict, rationale, then the rest
        assert tops["rationale"] < 1.5 * 844, tops
        expect(page.locator("#evidence [data-rationale]")).to_be_visible()
        expect(page.get_by_role("button", name="Approve")).to_be_visible()
        expect(page.locator("[data-supports] > li").first).to_be_visible()
    finally:
        context.close()


def test_on_a_laptop_the_focus_view_keeps_the_evidence_beside_the_item(browser, live_server, bank, owner, reviewed):
    context, page = signed_in(browser, live_server, owner)
    try:
        page.goto(f"{live_server.url}/banks/{bank.public_id}/review/{reviewed.public_id}/")
        page.locator("#evidence [data-rationale]").wait_for()
        panel, aside = page.locator("#item-panel").bounding_box(), page.locator(".split.focus > aside").bounding_box()
        assert aside["x"] >= panel["x"] + panel["width"] and abs(aside["y"] - panel["y"]) < 2, (panel, aside)
        history = page.locator("ol.history").bounding_box()  # the item's history stays in its panel
        assert panel["y"] < history["y"] < panel["y"] + panel["height"], (panel, history)
    finally:
        context.close()
