"""The per-reviewer statistics page through Django's test client."""

from __future__ import annotations

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories.items.models import MemoryItem, MemoryItemVersion
from memories.review.decisions import memory_item_approve, memory_item_archive
from tests.factories import bulk_items
from trajectories.dashboard.reviewers import reviewer_stats
from trajectories.judging.verdicts import judgment_record
from trajectories.models import Judgment, JudgmentSource, Trajectory


def _row(html: str, username: str) -> str:
    return html.split(f'data-reviewer="{username}"')[1].split("</tr>")[0]


def _cell(row: str, name: str) -> str:
    """The text of the row's ``data-<name>`` cell, its markup and spacing removed."""
    cell = row.split(f"<td data-{name}>")[1].split("</td>")[0]
    return " ".join(re.sub(r"<[^>]+>", "", cell).split())


def test_reviewer_stats_count_decisions_and_agreement_with_cases(client, bank, owner, alice, bob, viewer):
    items = bulk_items(bank, 3)
    for item in items:
        memory_item_approve(item=item, author=alice)
    for item in items[:2]:  # bob overturns two of alice's approvals
        memory_item_archive(item=MemoryItem.objects.get(pk=item.pk), author=bob)
    trajectories = [Trajectory.objects.create(bank=bank, task=f"task {n}", steps=[]) for n in range(5)]
    for n, t in enumerate(trajectories):
        judge_said = "failure" if n == 4 else "success"
        judgment_record(trajectory=t, source=JudgmentSource.LLM, label=judge_said, prompt_version="judge/v1")
        judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label="success", author=alice)
    for n, t in enumerate(trajectories[:4]):  # bob agrees on three verdicts, not on the fourth
        judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label="failure" if n == 3 else "success", author=bob)

    client.force_login(viewer)
    html = client.get(reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id})).content.decode()

    alice_row, bob_row, owner_row = _row(html, "alice"), _row(html, "bob"), _row(html, "owner")
    assert 'data-reviewer="viewer' not in html  # viewers do not review
    # alice: 3 approvals; 2 overturned (disagree) + 3 verdicts agreed + 1 not = 6 cases, 3 agree
    assert _cell(alice_row, "peers") == "50% (3 of 6)"
    assert _cell(alice_row, "judge") == "80% (4 of 5)"  # the judge said failure once
    assert '<td class="num">3</td><td class="num">0</td><td class="num">0</td>' in alice_row
    assert _cell(bob_row, "peers") == "50% (3 of 6)"
    # 3 of 4: too few to state a share, so the counts and how many more it needs
    assert _cell(bob_row, "judge") == "3 of 4 (a rate needs 5 cases, 1 more)"
    assert _cell(owner_row, "judge") == "no case yet (a rate needs 5 cases, 5 more)" and "0%" not in owner_row
    assert "8 decisions in 14 days, at most 8 a day" in alice_row  # 3 approvals + 5 verdicts, all today
    assert alice_row.count("<rect") == 1
    thirty = client.get(reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id}), {"days": "30"})
    assert "in 30 days" in _row(thirty.content.decode(), "alice")


def test_reviewer_stats_read_the_periods_rows_from_covering_indexes(bank, alice):
    # At 1M trajectories the period's versions cost 3,100 heap pages (47 ms) and its human verdicts were found by
    # walking each reviewer's judgments of all time: both are answered from an index alone.
    for item in bulk_items(bank, 60):
        memory_item_approve(item=item, author=alice)
    for n in range(60):
        t = Trajectory.objects.create(bank=bank, task=f"task {n}", steps=[])
        judgment_record(trajectory=t, source=JudgmentSource.LLM, label="success", prompt_version="judge/v1")
        judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label="success", author=alice)
    year_ago = timezone.now() - timedelta(days=365)  # the period holds a few of the rows, as at scale
    MemoryItemVersion.objects.exclude(item__in=MemoryItem.objects.order_by("-id")[:3]).update(created_at=year_ago)
    Judgment.objects.exclude(trajectory__in=Trajectory.objects.order_by("-id")[:3]).update(created_at=year_ago)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memoryitem")
        cursor.execute("ANALYZE memories_memoryitemversion")
        cursor.execute("ANALYZE trajectories_trajectory")
        cursor.execute("ANALYZE trajectories_judgment")
    with CaptureQueriesContext(connection) as captured:
        reviewer_stats(bank=bank)
    plans = {}
    with connection.cursor() as cursor:
        # At 60 rows the plain indexes on created_at (and the human judgments' by trajectory) tie with the covering
        # ones, and the dead rows earlier tests left decide between them (at scale the covering ones read no heap
        # page): without them, in this transaction only, the plan must find the covering ones usable.
        for index in ("memoryitemversion_created", "judgment_created", "judgment_human_latest"):
            cursor.execute(f"DROP INDEX {index}")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")  # a bitmap scan reads the heap: at 60 rows it may tie
        for query in captured.captured_queries:
            sql = query["sql"]
            if 'FROM "memories_memoryitemversion"' in sql or "'human'" in sql:
                cursor.execute("EXPLAIN " + sql)
                plans["versions" if "memoryitemversion" in sql else "verdicts"] = "\n".join(r[0] for r in cursor)
    assert "using itemversion_authored_created" in plans["versions"], plans["versions"]
    assert "on judgment_human_created" in plans["verdicts"] or "using judgment_human_created" in plans["verdicts"]
    assert "trajectories_judgment_author_id" not in plans["verdicts"]  # not each reviewer's verdicts of all time


def test_decisions_count_on_the_reviewers_local_day(bank, alice):
    (item,) = bulk_items(bank, 1)
    memory_item_approve(item=item, author=alice)
    now = timezone.now().replace(hour=20, minute=0)  # in UTC+14, 10:00 the next day
    MemoryItemVersion.objects.filter(item=item, action="approved").update(created_at=now - timedelta(minutes=1))
    with timezone.override("Pacific/Kiritimati"):
        (row,) = [r for r in reviewer_stats(bank=bank, now=now) if r.username == "alice"]
    assert row.approved == 1 and row.per_day[-1] == (
        timezone.localdate(now, timezone=ZoneInfo("Pacific/Kiritimati")),
        1,
    )
