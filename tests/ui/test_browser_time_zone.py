"""Dates are the reviewer's: in a real headless Chromium set to Tokyo's time
zone, the pages learn the browser's zone (the ``rb_tz`` cookie app.js sets),
a "Valid until" day picked on an item's page lasts to the end of that day in
Tokyo, and the page names the day back in the same zone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from memories.review.decisions import memory_item_approve
from tests import factories
from tests.ui.conftest import signed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TOKYO = "Asia/Tokyo"  # UTC+9 all year: a day there ends 9 hours before the same day ends in UTC


def test_a_picked_day_is_a_day_where_the_reviewer_is(browser, live_server, bank, owner):
    item = factories.propose_item(bank, factories.make_done_trajectory(bank), title="Type dates into date pickers")
    memory_item_approve(item=item, author=owner, confirm_duplicate=True)
    context, page = signed_in(browser, live_server, owner, timezone_id=TOKYO)
    try:
        assert {c["name"]: c["value"] for c in context.cookies()}.get("rb_tz") == "Asia%2FTokyo"

        page.goto(f"{live_server.url}/banks/{bank.public_id}/items/{item.public_id}/")
        page.locator("#lifecycle summary", has_text="Validity").click()
        form = page.locator("#lifecycle form:has(input[name=valid_until])")
        form.locator("input[name=valid_until]").fill("2031-03-05")
        form.get_by_role("button", name="Save validity").click()
        expect(page.locator("#item-panel")).to_contain_text("5 Mar 2031")
        item.refresh_from_db()
        assert item.valid_until == datetime(2031, 3, 5, 23, 59, 59, 999999, tzinfo=ZoneInfo(TOKYO))
    finally:
        context.close()
