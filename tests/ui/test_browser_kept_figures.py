"""A big bank's dashboard and reviewers page in a real headless Chromium while a worker computes their kept
figures: the page opens with placeholders, and once the worker stored the figures the poll swaps in the charts
and the per-version tables (one fragment, the second part out of band) and the reviewers table, with no reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memories.review.decisions import memory_item_approve
from tests import factories
from trajectories.dashboard import report as report_module
from trajectories.tasks import dashboard_report, reviewer_report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_dashboards_placeholders_become_the_panels_once_a_worker_computed_them(
    page, live_server, login, bank, owner, monkeypatch
):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)  # a big bank's path, on a small one
    t = factories.make_done_trajectory(bank)
    factories.record_verdict(t, "success")
    factories.record_verdict(t, "success", source="human", author=owner)
    login(page, live_server, owner, f"/banks/{bank.public_id}/")
    expect(page.locator("#report-charts [data-kept-pending]")).to_be_visible()
    expect(page.locator("#report-by-version [data-report-pending]")).to_be_visible()
    expect(page.locator("#live [data-report-pending]")).to_be_visible()
    page.wait_for_timeout(2500)  # a poll or two while nothing is stored: still waiting
    expect(page.locator("#report-charts [data-kept-pending]")).to_be_visible()

    assert dashboard_report(bank.pk) is True  # the worker's run
    expect(page.locator("#charts #chart-agreement")).to_be_visible(timeout=10_000)
    expect(page.locator("#agreement-by-version")).to_contain_text("Each LLM judgment against the reviewer")
    expect(page.locator("[data-report-pending]")).to_have_count(0, timeout=10_000)  # the live refresh too
    expect(page.locator("#live")).to_contain_text("agree on 1 of 1 trajectory")


def test_the_reviewers_placeholder_becomes_the_table_once_a_worker_computed_it(
    page, live_server, login, bank, owner, alice, monkeypatch
):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)
    (item,) = factories.bulk_items(bank, 1)
    memory_item_approve(item=item, author=alice)
    login(page, live_server, owner, f"/banks/{bank.public_id}/reviewers/")
    expect(page.locator("#reviewer-figures [data-kept-pending]")).to_be_visible()
    assert reviewer_report(bank.pk, 14, "UTC") is True
    expect(page.locator('#reviewer-stats [data-reviewer="alice"]')).to_be_visible(timeout=10_000)
    expect(page.locator("#agreement")).to_be_visible()
    expect(page.locator("[data-kept-pending]")).to_have_count(0)
