"""A big bank's dashboard and reviewers page in a real headless Chromium while a worker computes their kept
figures: the page opens with placeholders, and once the worker stored the figures the poll swaps in the charts
and the per-version tables (one fragment, the second part out of band) and the reviewers table, with no reload.
Impact's outdated per-item table stays shown while a worker recomputes it, and the poll swaps in the new one; so
does the dashboard's report after "Recompute now", recomputed by a real Celery worker (tests/worker.py)."""

from __future__ import annotations

import os
import re
import signal

import pytest
from playwright.sync_api import expect

from memories.review.decisions import memory_item_approve
from tests import factories
from tests.trajectories.impact.test_item_table_queue import rows
from tests.trajectories.impact.test_item_tables import afresh, flip_an_old_verdict
from tests.trajectories.impact.test_rollups import history
from tests.worker import celery_broker, celery_worker, celery_worker_env  # noqa: F401
from trajectories.dashboard import report as report_module
from trajectories.impact import item_tables
from trajectories.tasks import dashboard_report, impact_item_table, reviewer_report

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


def test_an_outdated_impact_table_is_swapped_for_the_recomputed_one_without_a_reload(
    page, live_server, login, bank, owner, monkeypatch
):
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)  # a big bank's path, on a small one
    monkeypatch.setattr(item_tables, "KEPT_STALE_SECONDS", -1)  # every change is over the staleness
    trajectories = history(bank, seed=17)
    assert item_tables.item_table_compute(bank_id=bank.pk, since=None, limit=item_tables.PAGE_ITEMS)
    flip_an_old_verdict(trajectories)  # the kept table is outdated now
    login(page, live_server, owner, f"/banks/{bank.public_id}/impact/")
    figures = page.locator("#item-figures")
    expect(figures.locator("[data-kept-recomputing]")).to_be_visible()
    expect(figures.locator("[data-items-as-of]")).to_be_visible()
    old = rows(figures.inner_html())
    assert old
    page.evaluate("window.notReloaded = true")
    page.wait_for_timeout(2500)  # a poll or two while the worker has not stored it: the old table stays
    expect(figures.locator("[data-kept-recomputing]")).to_be_visible()
    assert rows(figures.inner_html()) == old

    assert impact_item_table(bank.pk, None, item_tables.PAGE_ITEMS) is True  # the worker's run
    expect(figures.locator("[data-kept-recomputing]")).to_have_count(0, timeout=10_000)
    expect(figures.locator("[data-items-as-of]")).to_have_count(0)  # current now: no "as of"
    expect(figures.locator("#item-outcomes")).to_be_visible()
    assert rows(figures.inner_html()) == [public_id for public_id, *_ in afresh(bank, None)[0]]
    assert page.evaluate("window.notReloaded") is True


@pytest.mark.worker
@pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True)
def test_recompute_now_swaps_the_dashboards_recomputed_report_in_without_a_reload(
    page, live_server, login, bank, owner, monkeypatch, celery_worker
):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)  # a big bank's path, on a small one

    def labelled(human: str) -> None:
        t = factories.make_done_trajectory(bank)
        factories.record_verdict(t, "success")
        factories.record_verdict(t, human, source="human", author=owner)

    for _ in range(5):  # this week's rate is drawn from 5 cases
        labelled("success")
    assert dashboard_report(bank.pk) is True  # the report kept before
    labelled("failure")  # a label given since: the kept report does not count it
    login(page, live_server, owner, f"/banks/{bank.public_id}/")
    judge, by_version = page.locator("#judge-human"), page.locator("#agreement-by-version")
    chart, recomputing = page.locator("#chart-agreement"), page.locator("#report-charts [data-kept-recomputing]")
    expect(judge).to_contain_text("agree on 5 of 5 trajectories")
    expect(chart).to_contain_text("100% (5 of 5)")  # this week's, in the chart's numbers

    os.kill(celery_worker.process.pid, signal.SIGSTOP)  # the worker takes the recompute only when let go
    try:
        judge.get_by_role("link", name="Recompute now").click()
        page.wait_for_url(re.compile(r"\?fresh=1$"))
        page.evaluate("window.notReloaded = true")
        expect(recomputing).to_be_visible()
        expect(judge.locator("[data-report-recomputing]")).to_be_visible()
        page.wait_for_timeout(2500)  # a poll or two while the worker has not stored it: the kept report stays
        expect(recomputing).to_be_visible()
        expect(judge).to_contain_text("agree on 5 of 5 trajectories")
        expect(by_version).to_contain_text(re.compile(r"100% \[\d+–100%\] n=5"))  # the accuracy
        expect(chart).to_contain_text("100% (5 of 5)")
    finally:
        os.kill(celery_worker.process.pid, signal.SIGCONT)

    expect(recomputing).to_have_count(0, timeout=30_000)  # the worker stored the new report; the poll swapped it in
    expect(chart).to_contain_text("83% (5 of 6)")
    expect(by_version).to_contain_text(re.compile(r"83% \[\d+–\d+%\] n=6"))
    expect(judge).to_contain_text("agree on 5 of 6 trajectories")
    expect(judge.locator("[data-report-age]")).to_contain_text("Computed just now")
    expect(judge.get_by_role("link", name="Recompute now")).to_be_visible()
    assert page.evaluate("window.notReloaded") is True
