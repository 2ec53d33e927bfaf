"""The trust page in a real Chromium: a Disagree on the audit sample asks
first in a modal (Esc keeps the approval, Enter sends the item back), the
disagreement then shows in the page's history and as counts, not as a rate
from one case; and the page, with its lists of approvals, fits a laptop
(1366×768) and a phone (390×844) without scrolling sideways."""

from __future__ import annotations

import re

import pytest
from django.db import transaction
from django.urls import reverse
from playwright.sync_api import expect

from memories.items.models import ItemStatus, MemoryItem
from memories.trust.models import AutoApproval, VerdictTier
from memories.trust.services import bank_trust_policy_update, memory_items_auto_approve
from tests.factories import make_items, propose_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_WORD = "Supercalifragilistic-expialidocious-configuration-value"


@pytest.fixture
def sampled(bank, owner, trajectory):
    bank_trust_policy_update(bank=bank, actor=owner, auto_approve=True, audit_share=1.0, daily_llm_token_budget=50_000)
    item = propose_item(bank, trajectory, title="Prefer the official documentation " + LONG_WORD)
    with transaction.atomic():  # as the pipeline calls it
        (approval,) = memory_items_auto_approve(items=[item], tier=VerdictTier.HUMAN)
    for extra in make_items(bank, 30):
        extra.title = f"{extra.title}: an auto-approved lesson with a long title " + LONG_WORD
        extra.save(update_fields=["title"])
        AutoApproval.objects.create(item=extra, bank=bank)
    return approval


def test_a_disagreement_is_confirmed_in_a_modal_then_listed(page, live_server, login, bank, owner, sampled):
    url = reverse("memories:trust", kwargs={"bank_id": bank.public_id})
    login(page, live_server, owner, url)
    page.locator("[data-audit] button", has_text="Disagree").click()
    dialog = page.locator("dialog[data-disagree-confirm]")
    expect(dialog).to_be_visible()
    assert dialog.evaluate("d => d.matches(':modal')")
    assert MemoryItem.objects.get(pk=sampled.item_id).status == ItemStatus.APPROVED  # nothing happened yet
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    assert AutoApproval.objects.get(pk=sampled.pk).audit_verdict == ""

    page.locator("[data-audit] button", has_text="Disagree").click()
    expect(page.locator("dialog[data-disagree-confirm]")).to_be_visible()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(re.escape(url) + r"$"))
    expect(page.locator("[data-disagreements] [data-disagreed]")).to_have_count(1)
    expect(page.locator("[data-disagreement]")).to_have_text(re.compile(r"1 of 1\s*\(a rate needs 5 cases, 4 more\)"))
    assert MemoryItem.objects.get(pk=sampled.item_id).status == ItemStatus.PROPOSED


@pytest.mark.parametrize("width,height", [(1366, 768), (390, 844)])
def test_the_trust_page_fits_the_screen(browser, live_server, login, bank, owner, sampled, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        url = reverse("memories:trust", kwargs={"bank_id": bank.public_id})
        login(page, live_server, owner, url)
        expect(page.locator("[data-approved-list] [data-approved]")).to_have_count(25)
        expect(page.locator("nav.pager")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()
