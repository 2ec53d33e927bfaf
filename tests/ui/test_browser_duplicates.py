"""Duplicates in real Chromium: the queue previews content and
counts support; `a` on an item with an approved near-duplicate asks first —
Esc cancels (the item stays proposed), Enter approves anyway."""

from __future__ import annotations

import pytest

from accounts.models import Role
from accounts.teams.banks import bank_update_settings
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_create
from memories.review.decisions import memory_item_approve
from tests import factories
from tests.factories import make_done_trajectory, propose_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DATES = dict(
    title="Type dates into date picker inputs",
    description="Use when a form asks for a date with a calendar widget.",
    content="Typing the date as YYYY-MM-DD is more reliable than clicking through calendar months.",
)


def test_queue_preview_support_and_the_duplicate_confirmation(page, live_server, login, bank, owner):
    from playwright.sync_api import expect

    reviewer = factories.make_member(bank.team, Role.REVIEWER)
    trajectory = make_done_trajectory(bank)
    bank_update_settings(bank=bank, actor=None, duplicate_threshold=0.99)
    bank.refresh_from_db()
    served = propose_item(bank, trajectory, title="Prefer the official source")
    memory_item_approve(item=served, author=owner)
    twin = propose_item(bank, trajectory, title="Prefer official sources")  # a suggestion at 0.99
    bank_update_settings(bank=bank, actor=None, duplicate_threshold=0.9)
    bank.refresh_from_db()
    dates = propose_item(bank, trajectory, **DATES)
    assert propose_item(bank, make_done_trajectory(bank), **{**DATES, "title": DATES["title"] + "."}).pk == dates.pk

    login(page, live_server, reviewer, f"/banks/{bank.public_id}/review/")
    dates_row = page.locator(f"#item-{dates.public_id}")
    expect(dates_row.locator("[data-support]")).to_have_text("seen again ×1")
    expect(dates_row.locator("[data-preview]")).to_have_text(DATES["content"])

    page.keyboard.press("j")
    twin_row = page.locator(f"#item-{twin.public_id}")
    expect(twin_row).to_have_class("status-proposed focused")
    page.keyboard.press("a")
    dialog = page.locator("dialog[data-dup-confirm]")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Prefer the official source")
    expect(dialog.locator("[data-dup-confirm-ok]")).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(twin_row.locator("button", has_text="Approve")).to_be_visible()
    assert MemoryItem.objects.get(pk=twin.pk).status == ItemStatus.PROPOSED

    expect(twin_row).to_have_class("status-proposed focused")  # the row keeps the focus: `a` again
    page.keyboard.press("a")
    expect(dialog).to_be_visible()
    expect(dialog.locator("[data-dup-confirm-ok]")).to_be_focused()  # Enter goes to the focused button
    page.keyboard.press("Enter")
    expect(twin_row.locator(".badge.approved")).to_be_visible()
    assert MemoryItem.objects.get(pk=twin.pk).status == ItemStatus.APPROVED
    assert MemoryItem.objects.get(pk=dates.pk).status == ItemStatus.PROPOSED


def _twin_scene(bank, owner):
    served = memory_item_create(bank=bank, status=ItemStatus.APPROVED, author=owner, **DATES)
    # Written while the bank merged only identical text (a twin queued then), checked at today's threshold.
    bank_update_settings(bank=bank, actor=None, duplicate_threshold=1.0)
    bank.refresh_from_db()
    twin = memory_item_create(bank=bank, author=owner, **{**DATES, "title": DATES["title"] + " (again)"})
    bank_update_settings(bank=bank, actor=None, duplicate_threshold=0.92)
    bank.refresh_from_db()
    return served, twin


def test_m_in_the_duplicate_dialog_merges_into_the_approved_twin(page, live_server, login, bank, owner):
    from playwright.sync_api import expect

    served, twin = _twin_scene(bank, owner)
    login(page, live_server, owner, f"/banks/{bank.public_id}/review/")
    page.keyboard.press("j")
    page.keyboard.press("a")
    dialog = page.locator("dialog[data-dup-confirm]")
    expect(dialog.locator("[data-dup-merge]")).to_be_visible()
    page.keyboard.press("m")
    expect(page.get_by_text("Nothing to review.")).to_be_visible()  # nothing left: back to the queue
    twin.refresh_from_db()
    assert twin.status == ItemStatus.SUPERSEDED
    assert served.supports.count() == 1


def test_b_in_the_duplicate_dialog_keeps_both(page, live_server, login, bank, owner):
    from playwright.sync_api import expect

    _served, twin = _twin_scene(bank, owner)
    login(page, live_server, owner, f"/banks/{bank.public_id}/review/{twin.public_id}/")
    page.locator("[data-item]").wait_for()
    page.keyboard.press("a")
    expect(page.locator("dialog[data-dup-confirm] [data-dup-confirm-ok]")).to_be_focused()
    page.keyboard.press("b")
    page.wait_for_url(f"{live_server.url}/banks/{bank.public_id}/review/")
    twin.refresh_from_db()
    assert twin.status == ItemStatus.APPROVED
