"""The item exports at scale: both read the bank in keyset chunks along an index (EXPLAIN on a seeded,
ANALYZEd bank: no sort of the bank, no sequential scan), so the first record comes after one chunk's query;
and the records and their order are what the whole bank sorted at once gives, across chunk boundaries, ties
in time and items never approved."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.items import export as items_export
from memories.items.export import memory_items_export
from memories.items.models import ItemStatus, MemoryItem
from memories.serving import export as served_export
from memories.serving.export import served_items_export_reasoning_bank
from tests.factories import make_items

pytestmark = pytest.mark.django_db


def seed(bank, n: int) -> None:
    """``n`` items of ``bank``: most approved (some at the same instant), a few proposed and superseded."""
    statuses = [ItemStatus.APPROVED] * 8 + [ItemStatus.PROPOSED, ItemStatus.SUPERSEDED]
    now = timezone.now()
    items = make_items(bank, n)
    for i, item in enumerate(items):
        item.status = statuses[i % len(statuses)]
        item.created_at = now - timedelta(minutes=i // 3)
        item.approved_at = None if i % 7 == 0 else now - timedelta(minutes=(n - i) // 4)
    MemoryItem.objects.bulk_update(items, ["status", "created_at", "approved_at"])


def first_record_plans(export) -> list[str]:
    """The EXPLAIN of each query run before ``export``'s first record."""
    with CaptureQueriesContext(connection) as queries:
        next(iter(export()))
    with connection.cursor() as cur:
        out = []
        for q in queries.captured_queries:
            cur.execute("EXPLAIN " + q["sql"])
            out.append("\n".join(row[0] for row in cur.fetchall()))
    return out


@pytest.mark.parametrize(
    ("export", "index"),
    [
        (lambda bank: memory_items_export(bank=bank), "memoryitem_bank_created_id"),
        (lambda bank: served_items_export_reasoning_bank(bank=bank), "memoryitem_bank_approved_id"),
    ],
    ids=["items", "served"],
)
def test_the_first_record_is_one_chunk_read_along_an_index(bank, other_bank, export, index):
    seed(bank, 6000)
    seed(other_bank, 6000)
    with connection.cursor() as cur:
        cur.execute("ANALYZE memories_memoryitem")
    items = [p for p in first_record_plans(lambda: export(bank)) if "memories_memoryitem" in p]
    assert len(items) == 1, items  # one query for the first chunk, not a cursor over the bank
    (plan,) = items
    assert plan.startswith("Limit"), plan  # a chunk of rows, not a cursor that runs the query to its end
    assert index in plan, plan
    assert not re.search(r"Seq Scan on memories_memoryitem\b", plan), plan  # the item table (not its versions)
    # The chunk comes in index order: the Limit reads the index directly, the bank is never sorted (a
    # subplan may sort one item's versions).
    lines = plan.splitlines()
    scan = next(i for i, line in enumerate(lines) if f"Index Scan using {index} " in line)
    assert not any("Sort" in line for line in lines[:scan]), plan


def test_the_items_export_holds_every_row_in_order_across_chunks(bank, other_bank, monkeypatch):
    monkeypatch.setattr(items_export, "CHUNK", 4)
    seed(bank, 60)
    seed(other_bank, 10)
    every = MemoryItem.objects.filter(bank=bank).exclude(status=ItemStatus.SUPERSEDED)
    expected = [str(p) for p in every.order_by("created_at", "id").values_list("public_id", flat=True)]
    assert [row["id"] for row in memory_items_export(bank=bank)] == expected
    approved = every.filter(status=ItemStatus.APPROVED).order_by("created_at", "id")
    got = [row["id"] for row in memory_items_export(bank=bank, status=ItemStatus.APPROVED)]
    assert got == [str(p) for p in approved.values_list("public_id", flat=True)]


def test_the_served_export_holds_every_served_item_by_approval_then_the_never_approved(bank, other_bank, monkeypatch):
    monkeypatch.setattr(served_export, "CHUNK", 4)
    seed(bank, 60)
    seed(other_bank, 10)
    served = MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED)
    expected = [str(p) for p in served.order_by("approved_at", "id").values_list("public_id", flat=True)]
    assert served.filter(approved_at__isnull=True).exists()  # PostgreSQL sorts them last, by id
    assert [row["id"] for row in served_items_export_reasoning_bank(bank=bank)] == expected
