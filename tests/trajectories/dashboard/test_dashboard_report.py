"""The dashboard's report (the agreement overall, per version and per week, the distill outcomes, the charts):
a second view within its kept time reads none of the bank's human judgments or items, says how old its figures
are, and recomputes them when asked; the 5-second refresh shows the report's agreement figure instead of
reading it, and the approved count from the maintained item counts (current, never a count of the items)."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memories.items.models import ItemStatus
from tests import factories
from trajectories.dashboard import report as report_module
from trajectories.dashboard.report import REPORT_CACHE_SECONDS, agreement_figures
from trajectories.dashboard.selectors import agreement_by_week, judge_agreement_by_version, judge_human_agreement
from trajectories.models import Judgment
from trajectories.tasks import dashboard_report as dashboard_report_task
from trajectories.tasks import dashboard_reports

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "live"}


def report_reads(queries) -> list[str]:
    """The reads that grow with the human labels (WITH human AS), the items (the distill outcomes) or the
    item versions (the review chart)."""
    return [
        q["sql"]
        for q in queries.captured_queries
        if "WITH human AS" in q["sql"]
        or "WITH moves AS" in q["sql"]
        or '"memories_memoryitem"."prompt_version"' in q["sql"]
    ]


def approved_reads(queries) -> list[str]:
    """Counts of every approved item of the bank (not only the flagged ones)."""
    return [
        q["sql"]
        for q in queries.captured_queries
        if "status = 'approved')" in q["sql"] or '"memories_memoryitem"."status" = \'approved\')' in q["sql"]
    ]


def test_a_small_banks_report_is_computed_on_each_view(client, bank, owner):
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    t = factories.make_done_trajectory(bank)
    factories.record_verdict(t, "success")
    factories.record_verdict(t, "success", source="human", author=owner)
    first = client.get(url).content.decode()
    assert "agree on 1 of 1 trajectory" in first and "data-report-age" not in first
    Judgment.objects.create(trajectory=t, source="human", label="failure", author=owner)
    with CaptureQueriesContext(connection) as queries:
        again = client.get(url).content.decode()
    assert len(report_reads(queries)) == 3 and "agree on 0 of 1 trajectory" in again
    # The refreshes after it show the page's figure, not one read before the label.
    assert "agree on 0 of 1 trajectory" in client.get(url, **HTMX).content.decode()


def test_a_second_view_shows_the_kept_report_and_recomputes_it_when_asked(client, bank, owner, monkeypatch):
    assert REPORT_CACHE_SECONDS == 300
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)  # a big bank's report is kept
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    t = factories.make_done_trajectory(bank)
    factories.record_verdict(t, "success")
    factories.record_verdict(t, "success", source="human", author=owner)
    with CaptureQueriesContext(connection) as queries:
        assert "data-report-pending" in client.get(url).content.decode()  # a worker computes it
    assert not report_reads(queries)
    with CaptureQueriesContext(connection) as queries:
        assert dashboard_report_task(bank.pk) is True  # the worker's run
    # One read of the human labels (agreement overall, per version and per week), the distill outcomes, the chart.
    assert len(report_reads(queries)) == 3
    first = client.get(url).content.decode()
    assert "agree on 1 of 1 trajectory" in first
    assert "Computed just now" in first and "kept up to 5 minutes" in first and f'href="{url}?fresh=1"' in first
    Judgment.objects.create(trajectory=t, source="human", label="failure", author=owner)
    with CaptureQueriesContext(connection) as queries:
        again = client.get(url).content.decode()
    # 12, and the read of the roster of watched banks (reasoningbank_site.kept) a big bank's view makes.
    assert not report_reads(queries) and len(queries) <= 13, report_reads(queries)
    assert "agree on 1 of 1 trajectory" in again and 'id="chart-agreement"' in again
    factories.make_items(bank, 2, status=ItemStatus.APPROVED)
    assert "<p>0 approved" in again
    fresh = client.get(url + "?fresh=1").content.decode()  # queues a recompute, shows the kept report meanwhile
    assert "agree on 1 of 1 trajectory" in fresh and "data-report-recomputing" in fresh
    assert dashboard_report_task(bank.pk) is True
    fresh = client.get(url).content.decode()
    assert "agree on 0 of 1 trajectory" in fresh and "<p>2 approved" in fresh
    factories.make_items(bank, 1, status=ItemStatus.APPROVED)
    # The refresh shows the report's figure and its age, and the approved count as it is now (maintained).
    with CaptureQueriesContext(connection) as queries:
        live = client.get(url, **HTMX).content.decode()
    assert not report_reads(queries) and not approved_reads(queries), approved_reads(queries)
    assert "agree on 0 of 1 trajectory" in live and "<p>3 approved" in live and "data-report-age" in live


def test_the_refresh_reads_the_maintained_counts_when_no_report_is_kept(client, bank, owner):
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    factories.make_items(bank, 3, status=ItemStatus.APPROVED)
    with CaptureQueriesContext(connection) as queries:
        live = client.get(url, **HTMX).content.decode()
    assert not approved_reads(queries) and any("memories_memoryitemcount" in q["sql"] for q in queries)
    assert "<p>3 approved" in live and "data-report-age" not in live


def test_the_reports_one_pass_equals_the_three_agreement_reads(bank, other_bank, owner):
    """Two judge versions over three weeks, a reviewer who changed their mind, an unreviewed trajectory and
    another bank's labels: the one pass gives the same figures as the overall, per-version and per-week reads."""
    for n, (target, week, llm, human) in enumerate(
        [
            (bank, 0, "success", "success"),
            (bank, 0, "failure", "success"),
            (bank, 1, "failure", "failure"),
            (bank, 2, "success", "failure"),
            (bank, 2, "success", None),
            (other_bank, 0, "success", "failure"),
        ]
    ):
        t = factories.make_done_trajectory(target)
        for version in ("judge/v1", "judge/v2") if n % 2 else ("judge/v1",):
            judged = factories.record_verdict(t, llm if version == "judge/v1" else "success", prompt_version=version)
            Judgment.objects.filter(pk=judged.pk).update(created_at=judged.created_at - timedelta(weeks=week))
        if human:
            factories.record_verdict(t, "failure" if human == "success" else "success", source="human", author=owner)
            factories.record_verdict(t, human, source="human", author=owner)
    agreement, by_version, by_week = agreement_figures(bank=bank)
    assert (agreement.both, agreement.agree) == (4, 3)  # the latest LLM label: v2 where there is one
    assert [v.version for v in by_version] == ["judge/v1", "judge/v2"]
    assert agreement == judge_human_agreement(bank=bank)
    assert by_version == judge_agreement_by_version(bank=bank)
    assert by_week == agreement_by_week(bank=bank) and sum(w.n for w in by_week) == 6


def test_beat_recomputes_a_viewed_big_banks_report_and_the_view_reads_it(
    client, bank, other_bank, owner, settings, monkeypatch
):
    entry = next(e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == "trajectories.dashboard_reports")
    assert entry["schedule"] <= 60 < report_module.REPORT_CACHE_SECONDS - report_module.REFRESH_AFTER_SECONDS
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 2)
    factories.make_items(bank, 2, status=ItemStatus.APPROVED)
    factories.make_items(other_bank, 1, status=ItemStatus.APPROVED)  # below the size: never marked
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    assert "data-report-pending" in client.get(url).content.decode()  # the first view queues it
    assert dashboard_report_task(bank.pk) is True  # a worker computes it
    assert "<p>2 approved" in client.get(url).content.decode()
    client.get(reverse("trajectories:dashboard", kwargs={"bank_id": other_bank.public_id}))
    assert dashboard_reports.apply().result == 0  # just computed: not yet due

    monkeypatch.setattr(report_module, "REFRESH_AFTER_SECONDS", 0)  # due now
    factories.make_items(bank, 1, status=ItemStatus.APPROVED)
    assert dashboard_reports.apply().result == 1  # the viewed big bank only
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url).content.decode()
    assert not report_reads(queries) and not approved_reads(queries)
    assert "<p>3 approved" in page and "Computed just now" in page

    monkeypatch.setattr(report_module, "WATCH_SECONDS", 0)  # nobody viewed it lately: beat leaves it
    assert dashboard_reports.apply().result == 0
