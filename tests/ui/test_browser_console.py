"""The browser console stays clean through the review flow: no htmx error
such as ``The selector "find button" on hx-disabled-elt returned no
matches!`` while editing, cancelling, deciding and undoing (real Chromium)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts.models import Role
from tests import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_no_console_error_through_edit_cancel_approve_and_undo(page, live_server, login, bank, team):
    reviewer = factories.make_member(team, Role.REVIEWER)
    trajectory = factories.make_done_trajectory(bank)
    first = factories.propose_item(bank, trajectory)
    factories.propose_item(bank, title="Check the holiday schedule", content="Holidays change the opening hours.")
    console: list[str] = []
    page.on(
        "console", lambda msg: console.append(f"{msg.type}: {msg.text}") if msg.type in ("error", "warning") else None
    )
    login(page, live_server, reviewer, f"/banks/{bank.public_id}/review/{first.public_id}/")
    page.locator("#evidence [data-verdict]").wait_for()
    page.keyboard.press("e")
    page.locator("#edit-form [name=title]").wait_for()
    page.keyboard.press("Escape")
    expect(page.locator("#edit-form")).to_have_count(0)
    page.goto(f"{live_server.url}/banks/{bank.public_id}/review/")
    page.keyboard.press("j")
    page.keyboard.press("a")
    expect(page.locator(f"#item-{first.public_id}")).to_have_attribute("data-status", "approved")
    page.keyboard.press("u")
    expect(page.locator(f"#item-{first.public_id}")).to_have_attribute("data-status", "proposed")
    assert [line for line in console if "hx-" in line or "htmx" in line.lower()] == []
