"""Text search on the review queue, the item list and the trajectory list:
PostgreSQL full-text search over a GIN expression index,
every typed word matched as a word prefix, any input safe."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories.items.models import MemoryItem, item_search_vector
from memories.review.selectors import item_list, review_agents, review_queue
from reasoningbank_site import search_paging
from reasoningbank_site.search import prefix_tsquery, text_search
from reasoningbank_site.search_paging import SearchPaginator
from tests.factories import bulk_items, propose_item
from trajectories.models import Trajectory, trajectory_search_vector
from trajectories.records.selectors import trajectory_list

HOSTILE = [
    "'",
    "''",
    "\\",
    "\\'",
    "a'b",
    "!!!",
    "& | ! ( ) <-> :* :A",
    "foo:*A & !bar",
    "foo:*&|!",
    "x\x00y",
    "\x00",
    '"quoted words"',
    "%_%",
    "日本語 検索",
    "a" * 5000,
    " ".join(["w"] * 500),
    "\u200b",
]


@pytest.fixture
def items(bank):
    return {
        "calendar": propose_item(
            bank, title="Check the official calendar", description="Booking dates.", content="Open the venue site."
        ),
        "retry": propose_item(
            bank, title="Retry after a 503", description="Flaky shop API.", content="Back off and retry on shop-17."
        ),
        "quote": propose_item(bank, title="O'Brien's rule", description="Names with quotes.", content="Escape them."),
    }


def titles(qs) -> set[str]:
    return {item.title for item in qs}


def test_partial_words_match_as_prefixes(bank, items):
    assert titles(review_queue(bank=bank, text="calen")) == {"Check the official calendar"}
    assert titles(review_queue(bank=bank, text="BOOK")) == {"Check the official calendar"}  # description
    assert titles(item_list(bank=bank, text="ven")) == {"Check the official calendar"}  # content
    assert titles(item_list(bank=bank, text="shop-1")) == {"Retry after a 503"}
    assert titles(item_list(bank=bank, text="o'brien")) == {"O'Brien's rule"}


def test_every_word_must_match(bank, items):
    assert titles(item_list(bank=bank, text="retry flaky")) == {"Retry after a 503"}
    assert titles(item_list(bank=bank, text="retry calendar")) == set()
    assert titles(item_list(bank=bank, text="  the  ")) == {  # "the" and "them"
        "Check the official calendar",
        "O'Brien's rule",
    }


def test_blank_search_is_no_filter_and_wordless_search_finds_nothing(bank, items):
    assert len(item_list(bank=bank, text="   ")) == 3
    assert list(item_list(bank=bank, text="!!! ---")) == []
    assert prefix_tsquery("!!! ---") is None
    assert prefix_tsquery("a'b c\\d") == "'a''b':* & 'c\\\\d':*"


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_never_errors(bank, items, text):
    list(item_list(bank=bank, text=text))
    list(review_queue(bank=bank, text=text))
    list(trajectory_list(bank=bank, text=text))


def test_hostile_text_through_the_pages(client, owner, bank, items):
    client.force_login(owner)
    b = bank.public_id
    for name in ["memories:review", "memories:items", "trajectories:list"]:
        url = reverse(name, kwargs={"bank_id": b})
        for text in HOSTILE:
            response = client.get(url, {"q": text})
            assert response.status_code == 200, (name, text)


def test_other_banks_never_match(bank, other_bank, items):
    propose_item(other_bank, title="Check the other calendar")
    Trajectory.objects.create(bank=other_bank, task="Find the calendar of the library", steps=[])
    assert titles(item_list(bank=bank, text="calendar")) == {"Check the official calendar"}
    assert titles(review_queue(bank=bank, text="cal")) == {"Check the official calendar"}
    assert list(trajectory_list(bank=bank, text="library")) == []


def test_trajectories_match_task_answer_and_task_id(bank):
    Trajectory.objects.create(bank=bank, task="Book the cheapest trip", final_answer="Booked flight LH-400", steps=[])
    Trajectory.objects.create(bank=bank, task="Find a museum", task_id="shop-17", steps=[])
    assert {t.task for t in trajectory_list(bank=bank, text="chea tri")} == {"Book the cheapest trip"}
    assert {t.task for t in trajectory_list(bank=bank, text="lh-40")} == {"Book the cheapest trip"}
    assert {t.task for t in trajectory_list(bank=bank, text="shop-17")} == {"Find a museum"}
    assert {t.task for t in trajectory_list(bank=bank, text="museum cheapest")} == set()


def test_search_page_shows_matches_with_bounded_queries(client, owner, bank, django_assert_max_num_queries):
    bulk_items(bank, 30)
    propose_item(bank, title="Prefer the venue's own calendar")
    Trajectory.objects.bulk_create(Trajectory(bank=bank, task=f"task number {i}", steps=[]) for i in range(30))
    client.force_login(owner)
    b = bank.public_id
    # Queries: session, user, membership, bank, the matches' keys and the page's rows; the whole page adds the
    # agent dropdown (queue, trajectories) or the status tabs' counts (items), the queue its slices, versions and
    # presence. What typing fetches (the htmx list) has no dropdown or tabs. Rows add none (30 rows: no N+1).
    for name, text, expected, target, page_queries, list_queries in [
        ("memories:review", "venu", "Prefer the venue&#x27;s own calendar", "queue", 10, 9),
        ("memories:items", "venu calen", "Prefer the venue&#x27;s own calendar", "item-list", 7, 6),
        ("trajectories:list", "numb 17", "task number 17", "trajectory-rows", 7, 6),
        ("memories:review", "lesson", "Lesson 29", "queue", 10, 9),
        ("trajectories:list", "numb", "task number 29", "trajectory-rows", 7, 6),
    ]:
        url = reverse(name, kwargs={"bank_id": b})
        with django_assert_max_num_queries(page_queries):
            response = client.get(url, {"q": text})
        with django_assert_max_num_queries(list_queries):
            rows = client.get(url, {"q": text}, headers={"HX-Request": "true", "HX-Target": target})
        html, rows_html = response.content.decode(), rows.content.decode()
        assert response.status_code == 200 and expected in html, name
        assert rows.status_code == 200 and expected in rows_html and 'class="filters' not in rows_html, name
        if " " in text:  # a selective search shows only its matches
            assert "task number 3<" not in html and "Lesson 3<" not in html, name


def plan(qs) -> str:
    sql, params = qs.query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cur.fetchall())


def test_searches_are_answered_from_the_gin_indexes(bank, items):
    # The filter's expression is the index's (a bank's own rows come from the same index at scale).
    assert "memoryitem_search_gin" in plan(text_search(MemoryItem.objects.all(), item_search_vector(), "retry sho"))
    assert "trajectory_search_gin" in plan(text_search(Trajectory.objects.all(), trajectory_search_vector(), "cheap"))


def test_searched_pages_keep_the_lists_order_ties_included(bank):
    # The search paginator sorts the matches' keys apart from the rows: it must agree with the list's ORDER BY to the row.
    rows = bulk_items(bank, 120)
    same = timezone.now()
    MemoryItem.objects.filter(pk__in=[r.pk for r in rows[::2]]).update(created_at=same, updated_at=same)
    Trajectory.objects.bulk_create(Trajectory(bank=bank, task=f"task number {i}", steps=[]) for i in range(70))
    Trajectory.objects.filter(task__endswith="1").update(created_at=same)
    for qs, total in [
        (review_queue(bank=bank, text="lesso"), 120),
        (item_list(bank=bank, text="less"), 120),
        (trajectory_list(bank=bank, text="numb"), 70),
    ]:
        paginator = SearchPaginator(qs, 50)
        with CaptureQueriesContext(connection) as captured:
            shown = [row.pk for n in paginator.page_range for row in paginator.page(n).object_list]
        assert (paginator.count, paginator.capped) == (total, False)
        assert shown == list(qs.values_list("pk", flat=True))
        # The matches' keys are read once; each page's rows by key, without matching the text again.
        assert ["@@" in q["sql"] for q in captured.captured_queries] == [True] + [False] * paginator.num_pages


def test_past_the_cap_the_count_says_plus_and_pages_stay_in_order(client, owner, bank, monkeypatch):
    monkeypatch.setattr(search_paging, "SEARCH_COUNT_CAP", 20)
    bulk_items(bank, 45)
    qs = review_queue(bank=bank, text="lesson")
    paginator = SearchPaginator(qs, 10)
    assert (paginator.count, paginator.capped, paginator.num_pages) == (20, True, 2)
    assert [row.pk for row in paginator.page(2).object_list] == list(qs.values_list("pk", flat=True))[10:20]
    client.force_login(owner)
    html = client.get(reverse("memories:review", kwargs={"bank_id": bank.public_id}), {"q": "lesson"}).content.decode()
    assert "20+ proposed" in html and "Lesson 0<" in html


def searched_in(sql: str) -> bool:
    """Whether PostgreSQL ran a scan matching the text in ``sql`` (the head's
    walk computes the match in its output, which a plain EXPLAIN does not show)."""
    with connection.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE) " + sql)
        node, ran = "", False
        for (line,) in cur.fetchall():
            node = line if "(cost=" in line else node
            ran = ran or ("@@" in line and "never executed" not in node)
        return ran


@pytest.mark.parametrize(
    "renamed, expected, searched",
    [
        (range(0), (20, True), False),  # every row matches: the walk of the list's head caps it, no text search
        (range(10), (20, True), True),  # ten misses first: the text search counts (35 matches)
        (range(20, 45), (20, False), True),  # the head's first 20 rows match, then none: exactly 20, not capped
        (range(0, 45, 2), (20, True), True),  # every other row: the text search counts (22 matches)
    ],
)
def test_a_word_in_most_rows_is_capped_by_walking_the_head_of_the_list(bank, monkeypatch, renamed, expected, searched):
    monkeypatch.setattr(search_paging, "SEARCH_COUNT_CAP", 20)
    monkeypatch.setattr(search_paging, "DENSE_HEAD_MISSES", 5)  # the head: the list's first 25 rows
    rows = bulk_items(bank, 45)  # the queue's order: as created
    MemoryItem.objects.filter(pk__in=[rows[i].pk for i in renamed]).update(title="Other", description="", content="")
    qs = review_queue(bank=bank, text="lesson")
    paginator = SearchPaginator(qs, 10)
    with CaptureQueriesContext(connection) as captured:
        assert (paginator.count, paginator.capped) == expected
    assert searched_in(captured.captured_queries[0]["sql"]) is searched
    shown = [row.pk for n in paginator.page_range for row in paginator.page(n).object_list]
    assert shown == list(qs.values_list("pk", flat=True))[:20]


def test_agent_filters_list_the_recent_agents_once_each(client, owner, bank, other_bank):
    for agent in ["shop-bot", "", "calendar-bot", "shop-bot"]:
        Trajectory.objects.create(bank=bank, task="t", agent=agent, steps=[])
    Trajectory.objects.create(bank=other_bank, task="t", agent="elsewhere", steps=[])
    assert review_agents(bank=bank) == ["calendar-bot", "shop-bot"]
    client.force_login(owner)
    html = client.get(reverse("trajectories:list", kwargs={"bank_id": bank.public_id})).content.decode()
    assert 'value="calendar-bot"' in html and 'value="shop-bot"' in html and "elsewhere" not in html


def test_a_search_ordered_by_text_is_paged_by_the_database(bank, monkeypatch):
    # Python and PostgreSQL collate text differently: such an order is never sorted in Python.
    monkeypatch.setattr(search_paging, "SEARCH_COUNT_CAP", 5)
    bulk_items(bank, 12)
    qs = item_list(bank=bank, text="lesson").order_by("title", "id")
    paginator = SearchPaginator(qs, 5)
    assert (paginator.count, paginator.capped) == (12, False)
    shown = [row.title for n in paginator.page_range for row in paginator.page(n).object_list]
    assert shown == list(qs.values_list("title", flat=True)) and shown[:3] == ["Lesson 0", "Lesson 1", "Lesson 10"]
