"""Long unsearched lists (the review queue, the trajectory list): counted up
to LIST_COUNT_CAP (the pager says "10000+" past it), and a page past the
first found by reading the list's keys alone, its rows' per-row extras (risk
counts, versions, votes, presence) computed for that page's rows only."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memories.items.models import ItemStatus
from memories.review.selectors import review_queue
from reasoningbank_site import search_paging
from reasoningbank_site.search_paging import SearchPaginator
from tests.factories import bulk_items, make_trajectory
from trajectories.records import views
from trajectories.records.selectors import trajectory_list


def _offset_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if "OFFSET" in q["sql"] and 'FROM "memories_memoryitem"' in q["sql"]]


def test_a_deep_queue_page_reads_only_keys_before_its_offset(bank):
    bulk_items(bank, 25)
    qs = review_queue(bank=bank)
    expected = list(qs.values_list("pk", flat=True))[10:20]
    with CaptureQueriesContext(connection) as queries:
        page = SearchPaginator(qs, 10).page(2)
        rows = list(page.object_list)
    assert [row.pk for row in rows] == expected
    assert all(hasattr(row, "risk_count") for row in rows)  # the page's rows keep the queue's extras
    (offset_sql,) = _offset_reads(queries)
    assert re.match(r'SELECT "memories_memoryitem"."id"( AS "pk")? FROM', offset_sql), offset_sql
    assert "(SELECT" not in offset_sql, offset_sql  # no per-row subquery
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + offset_sql)
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "SubPlan" not in plan, plan  # the rows skipped by the OFFSET compute nothing per row


def test_the_queue_page_past_the_first_shows_the_same_rows_as_before(client, owner, bank):
    bulk_items(bank, 60)
    client.force_login(owner)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    html = client.get(url, {"page": 2}).content.decode()
    shown = re.findall(r"Lesson (\d+)<", html)
    oldest_first = [t.removeprefix("Lesson ") for t in review_queue(bank=bank).values_list("title", flat=True)]
    assert shown and shown == oldest_first[50:60], shown


def test_long_lists_count_up_to_the_cap_and_say_so(client, owner, bank, monkeypatch):
    bulk_items(bank, 7)
    for i in range(7):
        make_trajectory(bank, task=f"Task {i}")
    client.force_login(owner)
    queue = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    trajectories = reverse("trajectories:list", kwargs={"bank_id": bank.public_id})
    assert "7 proposed" in client.get(queue).content.decode()
    monkeypatch.setattr(search_paging, "LIST_COUNT_CAP", 5)
    assert "5+ proposed" in client.get(queue).content.decode()
    for listed in (review_queue(bank=bank), trajectory_list(bank=bank)):
        paginator = SearchPaginator(listed, 2)
        assert (paginator.count, paginator.capped, paginator.num_pages) == (5, True, 3)
        assert len(paginator.page(3).object_list) == 1  # no page past the cap
    monkeypatch.setattr(views, "PAGE_SIZE", 2)
    assert "Page 1 of 3 · 5+ " in client.get(trajectories).content.decode()


def test_the_capped_count_reads_keys_only(bank):
    bulk_items(bank, 3)
    with CaptureQueriesContext(connection) as queries:
        assert SearchPaginator(review_queue(bank=bank), 2).count == 3
    (count_sql,) = [q["sql"] for q in queries if "COUNT(*)" in q["sql"]]
    assert "memories_riskfinding" not in count_sql, count_sql  # the rows' risk counts are not computed to be counted
    assert "ORDER BY" not in count_sql, count_sql  # any rows will do: no walk of the list's order to count them


@pytest.mark.django_db
def test_a_deep_queue_page_s_keys_are_read_from_an_index_alone(bank, other_bank):
    bulk_items(bank, 3000)
    bulk_items(other_bank, 3000)
    bulk_items(bank, 3000, status=ItemStatus.APPROVED)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memoryitem")
    keys = review_queue(bank=bank).values_list("pk", flat=True)[2000:2050]
    plan = keys.explain()
    assert "Index Only Scan using memoryitem_queue_order" in plan, plan  # the keys come without reading the table
    assert "Sort" not in plan, plan  # the index holds the queue's whole order, ties by id included
