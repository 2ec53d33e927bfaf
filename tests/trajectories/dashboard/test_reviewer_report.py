"""The reviewers page's figures: a small bank's are computed on every view; a big bank's are kept (a second view
reads none of its item versions, judgments or review votes), say how old they are and are recomputed when asked
or by beat while the page is watched."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memories.items.models import MemoryItem
from memories.review.decisions import memory_item_approve, memory_item_archive
from tests import factories
from tests.factories import bulk_items
from trajectories.dashboard import report as report_module
from trajectories.dashboard.reviewer_report import reviewer_report
from trajectories.dashboard.reviewers import reviewer_stats
from trajectories.judging.verdicts import judgment_record
from trajectories.models import JudgmentSource, Trajectory
from trajectories.tasks import dashboard_reports
from trajectories.tasks import reviewer_report as reviewer_report_task


def figure_reads(queries) -> list[str]:
    """The reads that grow with the bank's history: item versions, judgments, review votes."""
    tables = ('"memories_memoryitemversion"', '"trajectories_judgment"', '"memories_reviewvote"')
    return [q["sql"] for q in queries.captured_queries if any(t in q["sql"] for t in tables)]


def _approved_by(bank, user) -> str:
    """Approve one more item as ``user``; its row's approvals cell is read by the tests."""
    (item,) = bulk_items(bank, 1)
    memory_item_approve(item=item, author=user)
    return item


def _approved_cell(html: str, username: str) -> str:
    row = html.split(f'data-reviewer="{username}"')[1].split("</tr>")[0]
    return row.split('<td class="num">')[1].split("</td>")[0]


def test_a_small_banks_page_shows_a_new_decision_at_once(client, bank, owner, alice):
    client.force_login(owner)
    url = reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id})
    _approved_by(bank, alice)
    first = client.get(url).content.decode()
    assert _approved_cell(first, "alice") == "1" and "data-report-age" not in first
    _approved_by(bank, alice)
    with CaptureQueriesContext(connection) as queries:
        again = client.get(url).content.decode()
    assert figure_reads(queries) and _approved_cell(again, "alice") == "2"


def test_a_big_banks_second_view_is_kept_says_its_age_and_recomputes_when_asked(
    client, bank, owner, alice, monkeypatch
):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)
    client.force_login(owner)
    url = reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id})
    _approved_by(bank, alice)
    assert "data-kept-pending" in client.get(url).content.decode()  # a worker computes them
    assert reviewer_report_task(bank.pk, 14, "UTC") is True
    first = client.get(url).content.decode()
    assert _approved_cell(first, "alice") == "1"
    assert "Computed just now" in first and "kept up to 5 minutes" in first and f"{url}?days=14&amp;fresh=1" in first
    _approved_by(bank, alice)
    with CaptureQueriesContext(connection) as queries:
        again = client.get(url).content.decode()
    assert not figure_reads(queries), figure_reads(queries)
    assert _approved_cell(again, "alice") == "1" and "data-report-age" in again
    assert "data-kept-pending" in client.get(url + "?days=30").content.decode()  # each period is kept on its own
    assert reviewer_report_task(bank.pk, 30, "UTC") is True
    thirty = client.get(url + "?days=30").content.decode()
    assert _approved_cell(thirty, "alice") == "2"
    fresh = client.get(url + "?days=14&fresh=1").content.decode()  # queues a recompute, shows the kept ones
    assert _approved_cell(fresh, "alice") == "1" and "data-kept-recomputing" in fresh
    assert reviewer_report_task(bank.pk, 14, "UTC") is True
    fresh = client.get(url + "?days=14").content.decode()
    assert _approved_cell(fresh, "alice") == "2"


def test_beat_refreshes_a_watched_big_banks_figures_and_leaves_an_unwatched_one(
    client, bank, team, owner, alice, settings, monkeypatch
):
    entry = next(e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == "trajectories.dashboard_reports")
    assert entry["schedule"] <= 60
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 3)  # the bank: 2 decisions, 2 approved items
    small = factories.make_bank(team=team, slug="small")
    _approved_by(bank, alice)
    _approved_by(bank, alice)
    _approved_by(small, alice)  # 1 + 1, below the size: never marked
    client.force_login(owner)
    url = reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id})
    assert "data-kept-pending" in client.get(url).content.decode()
    assert reviewer_report_task(bank.pk, 14, "UTC") is True  # a worker computes them
    assert _approved_cell(client.get(url).content.decode(), "alice") == "2"
    client.get(reverse("trajectories:reviewers", kwargs={"bank_id": small.public_id}))
    assert dashboard_reports.apply().result == 0  # just computed: not yet due

    monkeypatch.setattr(report_module, "REFRESH_AFTER_SECONDS", 0)  # due now
    _approved_by(bank, alice)
    assert dashboard_reports.apply().result == 1  # the watched big bank's 14 days only
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url).content.decode()
    assert not figure_reads(queries) and _approved_cell(page, "alice") == "3"

    monkeypatch.setattr(report_module, "WATCH_SECONDS", 0)  # nobody viewed it lately: beat leaves it
    assert dashboard_reports.apply().result == 0


def test_the_kept_figures_equal_reviewer_stats(bank, alice, bob, monkeypatch):
    monkeypatch.setattr(report_module, "KEPT_MIN_ROWS", 1)
    items = bulk_items(bank, 3)
    for item in items:
        memory_item_approve(item=item, author=alice)
    memory_item_archive(item=MemoryItem.objects.get(pk=items[0].pk), author=bob)
    for n in range(3):
        t = Trajectory.objects.create(bank=bank, task=f"task {n}", steps=[])
        judgment_record(trajectory=t, source=JudgmentSource.LLM, label="success", prompt_version="judge/v1")
        judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label="success", author=alice)
        judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label="failure" if n else "success", author=bob)
    for days in (14, 30):
        assert reviewer_report(bank=bank, days=days).pending  # a worker computes them
        assert reviewer_report_task(bank.pk, days, "UTC") is True
        computed = reviewer_report(bank=bank, days=days).figures
        kept = reviewer_report(bank=bank, days=days).figures
        assert computed.big and kept.computed_at == computed.computed_at
        assert kept.rows == reviewer_stats(bank=bank, days=days)
        assert [(r.username, r.approved, r.archived, r.verdicts) for r in kept.rows][:2] == [
            ("alice", 3, 0, 3),
            ("bob", 0, 1, 3),
        ]
