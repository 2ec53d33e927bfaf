"""A multi-word search reads the GIN index for its rarest word alone and
checks the whole query on the rows found: the same rows, in the same order,
as matching every word in the index."""

from __future__ import annotations

import pytest
from django.contrib.postgres.search import SearchQuery
from django.db import connection

from reasoningbank_site import search, search_paging
from reasoningbank_site.search import SearchColumn, prefix_tsquery, text_search
from reasoningbank_site.search_paging import SearchPaginator
from trajectories.models import Trajectory, trajectory_search_vector
from trajectories.records.selectors import trajectory_list

SHAPES = [
    "number 117",  # a common word and a rare one: the rare one drives
    "numb 117",
    "Number 11",  # a word too short to drive (it prefixes 110-119)
    "117 flight",  # the rare word's row lacks the other word: no match
    "number 999",  # no row at all
    "n 1",  # one-character words
    "number",
    '"number 117"',  # quotes are part of the words
    "task number 12 book",
    "book 13 number 130",
    "shop-17 number",
]


@pytest.fixture
def analyzed(bank):
    Trajectory.objects.bulk_create(
        Trajectory(bank=bank, task=f"Task number {i}: {'book the flight' if i % 2 else 'file the report'}", steps=[])
        for i in range(100, 160)
    )
    Trajectory.objects.filter(task__startswith="Task number 13").update(task_id="shop-17")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE trajectories_trajectory")
    search._common.clear()
    yield bank
    search._common.clear()


def matched_in_the_index(bank, text):
    """The search as matching every word in the index (before a word drove it)."""
    qs = trajectory_list(bank=bank)
    query = SearchQuery(prefix_tsquery(text), search_type="raw", config=search.SEARCH_CONFIG)
    return list(qs.alias(v=SearchColumn()).filter(v=query).values_list("pk", flat=True))


@pytest.mark.parametrize("text", SHAPES)
def test_the_rows_and_their_order_are_those_of_matching_every_word(analyzed, text, monkeypatch):
    monkeypatch.setattr(search_paging, "SEARCH_COUNT_CAP", 7)  # several pages, and past the cap
    expected = matched_in_the_index(analyzed, text)
    qs = trajectory_list(bank=analyzed, text=text)
    assert list(qs.values_list("pk", flat=True)) == expected
    paginator = SearchPaginator(qs, 3)
    shown = [row.pk for n in paginator.page_range for row in paginator.page(n).object_list]
    assert shown == expected[:7]


def test_a_rare_word_drives_and_the_common_ones_are_checked_per_row(analyzed):
    assert "ts_match_vq" in str(trajectory_list(bank=analyzed, text="number 117").query)
    for text in ["number", "number 11", "number task", '"number 117"']:  # one word, short, all common, no plain word
        assert "ts_match_vq" not in str(trajectory_list(bank=analyzed, text=text).query), text


def test_the_index_is_read_for_the_rare_word_alone(analyzed):
    # At tens of rows a bank's index wins; at scale the GIN index is read (1M trajectories: 185 ms -> 0.06 ms).
    qs = text_search(Trajectory.objects.order_by("-created_at", "-id"), trajectory_search_vector(), "number 117")
    sql, params = qs.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    conds = [line for line in plan.splitlines() if "Index Cond" in line and "@@" in line]
    assert "trajectory_search_gin" in plan and len(conds) == 1, plan
    assert "''117'':*" in conds[0] and "number" not in conds[0], plan
    assert "ts_match_vq" in plan, plan
