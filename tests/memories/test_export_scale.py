"""The item exports at scale: both read the bank in keyset chunks along an index (EXPLAIN on a seeded,
ANALYZEd bank: no sort of the bank, no sequential scan), so the first record comes after one chunk's query;
and the records and their order are what the whole bank sorted at once gives, across chunk boundaries, ties
in time and items never approved."""

from __future__ import annotations

import re
from datetime import timedelta
from itertools import islice

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.items import export as items_export
from memories.items.export import memory_items_export
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_edit
from memories.items.versions import items_created_record
from memories.releases import selectors as release_selectors
from memories.releases.models import Release, ReleaseMember
from memories.releases.publishing import release_publish
from memories.releases.selectors import release_export
from memories.serving import export as served_export
from memories.serving import release_item_exists
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


def released_bank(bank, other_bank, n: int):
    """``bank`` and ``other_bank`` seeded (``n`` and 10 items, each with its created version), ``bank``'s
    approved items published (the release returned)."""
    for target, count in ((bank, n), (other_bank, 10)):
        seed(target, count)
        items_created_record(items=list(MemoryItem.objects.filter(bank=target)))
    release_publish(bank=bank)  # a no-op when the bank published them automatically
    release = Release.objects.filter(bank=bank).latest("number")
    release.bank = bank
    return release


def test_the_release_export_s_first_item_is_one_chunk_read_along_an_index(bank, other_bank, monkeypatch):
    # A chunk as small against this release as 500 items are against a release of 100,000: the plan a big
    # bank gets (a short walk of the bank's items in order, each probed for its membership).
    monkeypatch.setattr(release_selectors, "CHUNK", 20)
    seed(bank, 1500)
    seed(other_bank, 1500)
    release = Release.objects.create(bank=bank, number=1, item_count=0)
    approved = MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED).values_list("pk", flat=True)
    ReleaseMember.objects.bulk_create(ReleaseMember(bank=bank, item_id=pk, version=1, added_in=1) for pk in approved)
    with connection.cursor() as cur:
        cur.execute("ANALYZE memories_memoryitem")
        cur.execute("ANALYZE memories_releasemember")
    with CaptureQueriesContext(connection) as queries:
        next(islice(release_export(release=release), 1, None))  # the header, then the first item
    (sql,) = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT "memories_memoryitem".')]
    with connection.cursor() as cur:
        cur.execute("EXPLAIN " + sql)
        plan = "\n".join(row[0] for row in cur.fetchall())
    assert plan.startswith("Limit"), plan  # a chunk, not the whole release read before the first item
    lines = plan.splitlines()
    scan = next((i for i, line in enumerate(lines) if "Index Scan using memoryitem_bank_created_id " in line), None)
    assert scan is not None, plan
    assert not any("Sort" in line for line in lines[:scan]), plan


def test_the_release_export_holds_each_member_as_released_in_order_across_chunks(bank, other_bank, owner, monkeypatch):
    release = released_bank(bank, other_bank, 40)
    members = MemoryItem.objects.filter(release_item_exists(release.number), bank=bank).order_by("created_at", "id")
    edited = members[5]
    memory_item_edit(item=edited, author=owner, content="Edited after the release.")
    whole = list(release_export(release=release))
    assert whole[0]["release"]["number"] == release.number and whole[0]["release"]["items"] == len(whole) - 1
    assert [row["id"] for row in whole[1:]] == [str(p) for p in members.values_list("public_id", flat=True)]
    assert whole[6]["content"] == "c" and whole[6]["version"] == 1  # as released, not as edited since
    monkeypatch.setattr(release_selectors, "CHUNK", 3)
    assert list(release_export(release=release)) == whole
