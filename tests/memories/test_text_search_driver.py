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
from tests import factories
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
        cursor.execute("ANALYZE trajectories_rawrecord")
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
    # The trajectory's text is in two tables (the task, the raw record's final answer): one word drives,
    # found in both tables' indexes, single words and quoted ones too, unless every word is common.
    for text in ["number 117", "117", '"number 117"']:
        assert "ts_match_vq" in str(trajectory_list(bank=analyzed, text=text).query), text
    for text in ["number", "number 11", "number task", "n 1"]:  # every word common or too short to drive
        assert "ts_match_vq" not in str(trajectory_list(bank=analyzed, text=text).query), text


def test_the_index_is_read_for_the_rare_word_alone(analyzed):
    # At tens of rows a bank's index wins; at scale the GIN indexes are read (1M trajectories: 185 ms -> 0.06 ms).
    qs = text_search(Trajectory.objects.order_by("-created_at", "-id"), trajectory_search_vector(), "number 117")
    sql, params = qs.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    conds = [line for line in plan.splitlines() if "Index Cond" in line and "@@" in line]
    assert "trajectory_search_gin" in plan and "rawrecord_answer_gin" in plan and len(conds) == 2, plan
    assert all("''117'':*" in cond and "number" not in cond for cond in conds), plan
    assert "ts_match_vq" in plan, plan


def test_a_final_answer_s_words_are_found_with_the_task_s(bank):
    """The words of one search may be split between the task and the final answer (another table)."""
    both = factories.make_done_trajectory(bank, task="Book the 17:05 train", final_answer="Seat 42B, coach zebra")
    factories.make_done_trajectory(bank, task="Book the 9:10 train", final_answer="Seat 3A")
    for text in ["zebra", "zeb train", "book zebra 42b", "coach"]:
        assert list(trajectory_list(bank=bank, text=text).values_list("pk", flat=True)) == [both.pk], text
    assert not trajectory_list(bank=bank, text="zebra 9:10").exists()
    factories.purge_raw(both)  # its final answer's words go with the raw record
    assert not trajectory_list(bank=bank, text="zebra").exists()
    assert list(trajectory_list(bank=bank, text="17:05 train").values_list("pk", flat=True)) == [both.pk]


def test_words_each_in_some_rows_drive_together_and_words_in_most_rows_walk(bank, monkeypatch):
    """By the statistics of both tables: a rare word drives alone; two or more words each in at most half the
    rows drive together (the rows they share, found in both indexes); one such word, or words in most rows,
    walk the list's order (their matches are dense)."""
    stats = {
        "trajectories_trajectory": {"fix": 0.125, "ticket": 0.1, "task": 1.0},
        "trajectories_rawrecord": {"ticket": 0.025, "done": 0.9},
    }
    monkeypatch.setattr(search, "_common_lexemes", lambda using, table, column: stats.get(table))
    qs, vector = Trajectory.objects.filter(bank=bank), trajectory_search_vector()
    assert search.driving_tsquery(qs, vector, "fix ticket") == ("'fix':*", "'ticket':*")
    assert search.driving_tsquery(qs, vector, "fix 4242") == ("'4242':*",)
    assert search.driving_tsquery(qs, vector, "fix") is None
    assert search.driving_tsquery(qs, vector, "task done") is None
    both = factories.make_done_trajectory(bank, task="Fix the CI job", final_answer="Ticket closed.")
    factories.make_done_trajectory(bank, task="Fix the build", final_answer="Done.")
    factories.make_done_trajectory(bank, task="Answer the ticket", final_answer="Done.")
    searched = trajectory_list(bank=bank, text="fix ticket")
    assert "INTERSECT" in str(searched.query)
    assert [t.pk for t in searched] == [both.pk]


def test_a_shared_words_search_whose_head_holds_the_cap_is_answered_by_walking_it(bank, monkeypatch):
    """Words each in some rows that often meet: the list's head, each row checked, gives the first matches in
    order, and they are those the driven search finds; words that rarely meet fall back to it."""
    stats = {"trajectories_trajectory": {"cheap": 0.3, "flight": 0.3, "fix": 0.3, "ticket": 0.3}}
    monkeypatch.setattr(search, "_common_lexemes", lambda using, table, column: stats.get(table))
    monkeypatch.setattr(search_paging, "SEARCH_COUNT_CAP", 3)
    monkeypatch.setattr(search_paging, "WALK_ROWS", 13)
    for i in range(12):
        task = ("Book the cheap flight", "Fix the build", "Answer the ticket")[i % 3]
        factories.make_done_trajectory(bank, task=f"{task} {i}", final_answer="Done.")
    factories.make_done_trajectory(bank, task="Fix it", final_answer="Ticket closed.")
    walked = []
    real = search_paging._walked_keys
    monkeypatch.setattr(search_paging, "_walked_keys", lambda *a: walked.append(real(*a)) or walked[-1])

    dense = trajectory_list(bank=bank, text="cheap flight")
    paginator = SearchPaginator(dense, 2)
    assert paginator.count == 3 and paginator.capped
    # The walk's keys are the driven search's first ones (the paginator keeps the cap's; one more said "more").
    assert walked[-1] == list(dense.values_list("pk", flat=True)[:3])
    assert [t.pk for t in paginator.page(1).object_list] == walked[-1][:2]

    sparse = trajectory_list(bank=bank, text="fix ticket")  # meet once, past the head: the driven search
    paginator = SearchPaginator(sparse, 2)
    assert paginator.count == 1 and walked[-1] is None
    assert [t.task for t in paginator.page(1).object_list] == ["Fix it"]
