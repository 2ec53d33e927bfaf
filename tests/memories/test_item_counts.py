"""A bank's maintained item counts (memories.items.counts): triggers write signed delta rows on every write
that moves an item's (bank, status, flagged), the dashboard's beat task merges them, and the dashboard's review
backlog reads them instead of the bank's items. Through each real write path (distillation by the pipeline,
a manual item, an import, the review decisions through the API and the services, a flag, a deletion, a
bank's deletion, compaction) the sums equal a COUNT(*) GROUP BY over the items; the migration's fill counts
what was there."""

from __future__ import annotations

import importlib
import json

import pytest
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from memories.items.counts import READ_SQL, item_counts
from memories.items.imports import memory_items_import
from memories.items.models import ItemStatus, MemoryItem, MemoryItemCount
from memories.items.services import memory_item_create
from memories.review.decisions import memory_item_approve, memory_item_archive, memory_item_reject
from tests import factories
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.dashboard.counts import counts_compact
from trajectories.dashboard.selectors import approved_count, review_backlog, review_by_day
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("memories.migrations.0041_item_counts")


def counted() -> dict[tuple, int]:
    """The maintained counts per (bank, status, flagged), keys summing to zero left out."""
    rows = MemoryItemCount.objects.values_list("bank_id", "status", "flagged").annotate(n=Sum("n")).order_by()
    return {tuple(key): n for *key, n in rows if n}


def recounted() -> dict[tuple, int]:
    """The same, counted from the items themselves."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT bank_id, status, needs_review_reason <> '', COUNT(*) FROM memories_memoryitem GROUP BY 1, 2, 3"
        )
        return {tuple(key): n for *key, n in cursor.fetchall()}


def assert_exact() -> None:
    assert counted() == recounted()


def test_distillation_and_the_review_decisions_through_the_api_are_counted(client, auth, bank, owner, fake_llm):
    fake_llm.responder = lambda messages: (
        JUDGE_SUCCESS if "accomplished the task" in messages[-1]["content"] else ITEMS_MD
    )
    body = {"task": "Find the opening hours", "steps": [{"kind": "thought", "content": "look it up"}]}
    response = client.post("/api/v1/trajectories", json.dumps(body), content_type="application/json", **auth)
    assert response.status_code == 202, response.content
    done = process_trajectory(Trajectory.objects.get(bank=bank))
    proposed = list(MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED))
    assert done.status == "done" and len(proposed) >= 2, done.status_detail
    assert review_backlog(bank=bank) == {"proposed": len(proposed), "flagged": 0, "approved": 0}
    assert_exact()

    review = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('review',), name='triage')}"}
    response = client.post(
        f"/api/v1/review/items/{proposed[0].public_id}/approve", "", content_type="application/json", **review
    )
    assert response.status_code == 200, response.content
    response = client.post(
        f"/api/v1/review/items/{proposed[1].public_id}/reject",
        json.dumps({"reason": "Too specific to one library."}),
        content_type="application/json",
        **review,
    )
    assert response.status_code == 200, response.content
    assert review_backlog(bank=bank) == {"proposed": len(proposed) - 2, "flagged": 0, "approved": 1}
    assert_exact()


def test_the_services_a_flag_an_import_and_a_deletion_are_counted(bank, other_bank, owner):
    factories.make_items(other_bank, 4)
    made = [
        memory_item_create(bank=bank, author=owner, title=title, description="When it applies", content=content)
        for title, content in (
            ("Cite the source", "Quote the page a figure came from, with its address."),
            ("Check units", "Convert every quantity to one unit system before comparing."),
            ("Log in first", "Sign in before searching an account's order history."),
            ("Retry once", "After a 503, wait a few seconds and retry the request once."),
        )
    ]
    assert_exact()
    for item in made[:3]:
        memory_item_approve(item=item, author=owner)
    memory_item_reject(item=made[3], author=owner, reason="Wrong.")
    memory_item_archive(item=made[2], author=owner)
    # A flag for another look, as the risk scan and the anomaly check write it (an UPDATE of the reason).
    MemoryItem.objects.filter(pk=made[0].pk).update(needs_review_reason="New risks found: please look again.")
    assert review_backlog(bank=bank) == {"proposed": 0, "flagged": 1, "approved": 2}
    assert_exact()
    lessons = (
        "Read the API's rate-limit headers before retrying a request.",
        "Confirm a flight's time zone on the airline's own booking page.",
        "Prefer the newest release notes when two versions disagree.",
    )
    records = [{"title": lesson[:30], "description": "When it applies", "content": lesson} for lesson in lessons]
    assert len(memory_items_import(bank=bank, author=owner, records=records).created) == 3
    assert review_backlog(bank=bank)["proposed"] == 3
    MemoryItem.objects.filter(pk=made[1].pk).delete()
    assert approved_count(bank=bank) == 1
    assert_exact()


def test_a_banks_deletion_and_compaction_leave_one_row_per_key(bank, other_bank):
    factories.bulk_items(bank, 30)
    factories.make_items(bank, 20)
    kept = factories.make_items(other_bank, 5)
    MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED).update(status=ItemStatus.APPROVED)
    MemoryItem.objects.filter(bank=bank).update(status=ItemStatus.ARCHIVED)
    assert MemoryItemCount.objects.count() > len(recounted())
    assert_exact()
    bank_pk = bank.pk
    bank.delete()
    assert_exact()
    assert not any(key[0] == bank_pk for key in counted())
    counts_compact()
    assert not MemoryItemCount.objects.filter(bank_id=bank_pk).exists()  # its rows summed to zero: dropped
    assert MemoryItemCount.objects.count() == len(recounted())  # one row per key
    assert review_backlog(bank=other_bank)["approved"] == len(kept)
    assert_exact()


def test_a_bulk_insert_writes_one_row_per_key_not_per_item(bank):
    factories.bulk_items(bank, 500)
    assert MemoryItemCount.objects.filter(bank=bank).count() == 1
    assert item_counts(bank_id=bank.pk) == {(ItemStatus.PROPOSED, False): 500}


def test_a_write_that_leaves_the_key_writes_no_row(bank, owner):
    item = memory_item_create(bank=bank, author=owner, title="Lesson", description="When", content="Do it.")
    counts_compact()
    before = MemoryItemCount.objects.count()
    MemoryItem.objects.filter(pk=item.pk).update(title="Lesson, edited", needs_review_reason="")
    MemoryItem.objects.filter(pk=item.pk).update(needs_review_reason="One reason")
    MemoryItem.objects.filter(pk=item.pk).update(needs_review_reason="Another reason")  # still flagged
    assert MemoryItemCount.objects.count() == before + 2  # only the flag moved it: -1 and +1
    assert_exact()


def test_the_migrations_fill_counts_what_was_there(bank, other_bank):
    factories.bulk_items(bank, 300)
    factories.make_items(other_bank, 40)
    MemoryItem.objects.filter(bank=other_bank, id__in=MemoryItem.objects.filter(bank=other_bank)[:5]).update(
        needs_review_reason="flagged"
    )
    before = recounted()
    MemoryItemCount.objects.all().delete()  # as before the migration: no rows
    with connection.cursor() as cursor:
        fill = next(op for op in migration.Migration.operations if op.__class__.__name__ == "RunSQL")
        cursor.execute(fill.sql)
    assert counted() == before == recounted()
    assert before[(other_bank.pk, ItemStatus.APPROVED, True)] == 5


def test_the_dashboards_backlog_and_review_chart_count_no_item(bank, other_bank):
    for b in (bank, other_bank):
        factories.bulk_items(b, 600)
        factories.make_items(b, 3000)
        flagged = MemoryItem.objects.filter(bank=b, status="approved").order_by("id")[:7]
        MemoryItem.objects.filter(id__in=flagged).update(needs_review_reason="flagged by a test")
    waiting = MemoryItem.objects.filter(bank=bank, status="proposed").order_by("id")[:3]
    MemoryItem.objects.filter(id__in=waiting).update(needs_review_reason="waiting")  # a proposed item's is no flag
    with CaptureQueriesContext(connection) as queries:
        assert review_backlog(bank=bank) == {"proposed": 600, "flagged": 7, "approved": 3000}
    (query,) = queries.captured_queries
    assert "memories_memoryitemcount" in query["sql"] and "memories_memoryitem " not in query["sql"]
    with CaptureQueriesContext(connection) as queries:
        assert review_by_day(bank=bank)[-1].backlog == 600
    moves, today = (q["sql"] for q in queries.captured_queries)  # the window's versions, then today's backlog
    assert "memories_memoryitemversion" in moves and "memories_memoryitemcount" in today


def test_a_banks_counts_are_read_along_their_index_among_many_banks(bank):
    factories.bulk_items(bank, 5)
    # Many banks' uncompacted rows (the bank ids need no bank: the table has no foreign key constraint).
    MemoryItemCount.objects.bulk_create(
        MemoryItemCount(bank_id=100_000 + i // 4, status=("proposed", "approved")[i % 2], flagged=i % 4 == 3, n=1)
        for i in range(20_000)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memoryitemcount")
        cursor.execute(f"EXPLAIN {READ_SQL}", [bank.pk])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "memoryitemcount_bank_status" in plan and "Seq Scan" not in plan, plan
    assert item_counts(bank_id=bank.pk) == {(ItemStatus.PROPOSED, False): 5}
