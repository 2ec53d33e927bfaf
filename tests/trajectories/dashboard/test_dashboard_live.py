"""The dashboard's 5-second refresh on a big bank: the recent activity reads the newest item versions by index
(EXPLAIN on seeded, ANALYZEd tables), and the judge/human agreement figure is computed by the whole page and
reused by the refreshes for a minute, not recomputed every 5 seconds."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories.items.models import MemoryItemVersion
from tests import factories
from trajectories.dashboard import report as report_module
from trajectories.dashboard.selectors import AGREEMENT_CACHE_SECONDS, recent_activity, review_by_day
from trajectories.models import Judgment
from trajectories.tasks import dashboard_report as dashboard_report_task

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "live"}


def seed_versions(bank, n: int) -> None:
    """``n`` items of ``bank``, each with three versions, then ANALYZE."""
    items = factories.bulk_items(bank, n)
    MemoryItemVersion.objects.bulk_create(
        MemoryItemVersion(
            item=item,
            number=number,
            title=item.title,
            description="d",
            content="c",
            status="proposed",
            action="created" if number == 1 else "edited",
        )
        for item in items
        for number in (1, 2, 3)
    )
    with connection.cursor() as cur:
        cur.execute("ANALYZE memories_memoryitem")
        cur.execute("ANALYZE memories_memoryitemversion")


def version_plan(bank) -> str:
    with CaptureQueriesContext(connection) as queries:
        recent_activity(bank=bank)
    (sql,) = [q["sql"] for q in queries.captured_queries if "memories_memoryitemversion" in q["sql"]]
    with connection.cursor() as cur:
        cur.execute("EXPLAIN " + sql)
        return "\n".join(row[0] for row in cur.fetchall())


def test_recent_activity_reads_the_newest_item_versions_by_index(bank, other_bank):
    seed_versions(bank, 3000)
    seed_versions(other_bank, 1000)
    plan = version_plan(bank)
    assert "memoryitemversion_created" in plan, plan
    assert "Seq Scan on memories_memoryitemversion" not in plan, plan
    latest = MemoryItemVersion.objects.filter(item__bank=bank).order_by("-created_at", "-id")[:12]
    got = [(e.public_id, e.title) for e in recent_activity(bank=bank) if e.kind == "item"]
    assert got == [(str(v.item.public_id), v.item.title) for v in latest]


def agreement_reads(queries) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "WITH human AS" in q["sql"]]


def test_refresh_reuses_the_pages_agreement_figure_for_a_minute(client, bank, owner, monkeypatch):
    assert AGREEMENT_CACHE_SECONDS == 60
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)  # a big bank's: its report is kept
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    t = factories.make_done_trajectory(bank)
    factories.record_verdict(t, "success")
    factories.record_verdict(t, "success", source="human", author=owner)
    client.get(url)  # queues the report
    with CaptureQueriesContext(connection) as queries:
        dashboard_report_task(bank.pk)  # a worker computes it
    assert agreement_reads(queries)
    assert "agree on 1 of 1 trajectory" in client.get(url).content.decode()
    # A new human label: the refreshes within the minute show the page's figure, without reading judgments.
    Judgment.objects.create(trajectory=t, source="human", label="failure", author=owner)
    with CaptureQueriesContext(connection) as queries:
        live = client.get(url, **HTMX).content.decode()
    assert not agreement_reads(queries)
    assert "agree on 1 of 1 trajectory" in live
    # The whole page reads it afresh when asked (its report: test_dashboard_report.py; the refreshes then show that).
    assert "data-report-recomputing" in client.get(url + "?fresh=1").content.decode()
    dashboard_report_task(bank.pk)
    assert "agree on 0 of 1 trajectory" in client.get(url).content.decode()
    assert "agree on 0 of 1 trajectory" in client.get(url, **HTMX).content.decode()


def test_refresh_reads_the_agreement_when_nothing_is_kept(client, bank, owner):
    client.force_login(owner)
    url = reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})
    t = factories.make_done_trajectory(bank)
    factories.record_verdict(t, "failure")
    factories.record_verdict(t, "success", source="human", author=owner)
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        live = client.get(url, **HTMX).content.decode()
    assert agreement_reads(queries) and "agree on 0 of 1 trajectory" in live


def test_review_chart_reads_only_the_windows_versions(bank, other_bank):
    seed_versions(bank, 3000)
    seed_versions(other_bank, 1000)
    with connection.cursor() as cur:  # a year of history: a day per item, its three versions a minute apart
        cur.execute(
            "UPDATE memories_memoryitemversion SET created_at = now() - make_interval(days => (item_id % 365)::int)"
            " + make_interval(mins => number)"
        )
        cur.execute("ANALYZE memories_memoryitemversion")
    with CaptureQueriesContext(connection) as queries:
        days = review_by_day(bank=bank)
    # Each item entered the queue on its day (its first version proposed; the later ones stay proposed).
    entered = {}
    for v in MemoryItemVersion.objects.filter(item__bank=bank, number=1):
        entered[timezone.localdate(v.created_at)] = entered.get(timezone.localdate(v.created_at), 0) + 1
    backlog = [d.backlog for d in days]
    assert backlog[-1] == 3000
    assert all(a + entered.get(d.day, 0) == b for a, b, d in zip(backlog, backlog[1:], days[1:], strict=False))
    (sql,) = [q["sql"] for q in queries.captured_queries if "memories_memoryitemversion" in q["sql"]]
    with connection.cursor() as cur:
        cur.execute("EXPLAIN " + sql)
        plan = "\n".join(row[0] for row in cur.fetchall())
    assert "memoryitemversion_created" in plan, plan
    assert "Seq Scan on memories_memoryitemversion" not in plan, plan
