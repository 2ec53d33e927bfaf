import random

import pytest
from django.db import connection

from accounts.models import ApiToken
from accounts.tokens.auth import api_token_hit
from memories.items.experiences import experience_create
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_propose
from memories.review.decisions import memory_item_approve, memory_item_reject
from memories.serving import NO_FILTERS
from memories.serving import search as search_module
from memories.serving.models import Arm, RetrievalEvent, RetrievalTally
from memories.serving.preview import system_block_preamble
from memories.serving.retrieval import retrieval_perform
from memories.serving.search import approved_items_search, approved_items_search_counted
from memories.serving.upkeep import memory_items_count_served
from tests import factories

LOGIN = (
    "Sign in through the login form first",
    "Use when the task needs an account: orders, profile, saved settings.",
    "Locate the username and password fields on the login page, submit them, and confirm you are signed in before navigating.",
)
PAGINATION = (
    "Walk every page of a paginated list",
    "Use when results are split across numbered pages.",
    "Click 'next' until it disappears and collect rows from each page; the first page is rarely complete.",
)
DATE_PICKER = (
    "Type dates into date picker inputs",
    "Use when a form asks for a date with a calendar widget.",
    "Typing the date as YYYY-MM-DD into the field is more reliable than clicking through calendar months.",
)


@pytest.fixture
def web_items(bank, approved):
    return {
        name: approved(bank, *texts)
        for name, texts in (("login", LOGIN), ("pages", PAGINATION), ("dates", DATE_PICKER))
    }


def ids(result):
    return [item.pk for item, _ in result.items]


def test_sign_in_query_ranks_login_item_first(bank, web_items):
    bank.min_similarity = 0.0
    result = retrieval_perform(bank=bank, query="open the sign in page and log into my account", k=3)
    assert ids(result)[0] == web_items["login"].pk
    scores = [score for _, score in result.items]
    assert scores == sorted(scores, reverse=True)
    assert len(result.items) == 3
    date_result = retrieval_perform(bank=bank, query="choose the departure date in the calendar", k=1)
    assert ids(date_result) == [web_items["dates"].pk]


def test_system_block_lists_items_under_the_preamble(bank, web_items):
    result = retrieval_perform(bank=bank, query="log in to my account", k=1)
    preamble = system_block_preamble()
    assert result.system_block.startswith(preamble)
    assert "step by step" in preamble
    assert f"## {LOGIN[0]}\n{LOGIN[1]}\n{LOGIN[2]}" in result.system_block
    bank.min_similarity = 0.99
    assert retrieval_perform(bank=bank, query="log in to my account").system_block == ""


def test_other_banks_items_are_never_returned(bank, other_bank, approved):
    theirs = approved(other_bank, *LOGIN)
    ours = approved(bank, *PAGINATION)
    bank.min_similarity = -1.0
    result = retrieval_perform(bank=bank, query="sign in page", k=20)
    assert ids(result) == [ours.pk]
    assert theirs.pk not in ids(result)


def test_only_approved_items_are_served(bank, owner, approved):
    proposed = memory_item_propose(bank=bank, origin="success", title=LOGIN[0], description=LOGIN[1], content=LOGIN[2])
    rejected = memory_item_propose(
        bank=bank, origin="success", title="Log in first", description=LOGIN[1], content=LOGIN[2]
    )
    memory_item_reject(item=rejected, author=owner)
    archived = approved(bank, "Sign in early", LOGIN[1], LOGIN[2])
    archived.status = ItemStatus.ARCHIVED
    archived.save(update_fields=["status"])
    served = approved(bank, *PAGINATION)
    bank.min_similarity = -1.0
    result = retrieval_perform(bank=bank, query="sign in page", k=20)
    assert ids(result) == [served.pk]
    assert proposed.pk not in ids(result)


def test_k_and_min_similarity_are_applied(bank, web_items):
    bank.min_similarity = -1.0
    assert len(retrieval_perform(bank=bank, query="login form", k=2).items) == 2
    bank.top_k = 1
    assert len(retrieval_perform(bank=bank, query="login form").items) == 1
    bank.min_similarity = 0.35
    result = retrieval_perform(bank=bank, query="login form", k=3)
    assert result.items, "the login item is similar enough"
    assert all(score >= 0.35 for _, score in result.items)
    assert len(result.items) < 3, "pagination and date items are not about logging in"
    assert retrieval_perform(bank=bank, query="login form", k=500).event.k == 20


def test_leave_one_task_out(bank, owner):
    item = memory_item_propose(
        bank=bank, origin="success", source_task_id="task-7", title=LOGIN[0], description=LOGIN[1], content=LOGIN[2]
    )
    memory_item_approve(item=item, author=owner)
    bank.min_similarity = -1.0
    assert ids(retrieval_perform(bank=bank, query="sign in", task_id="task-7")) == []
    assert ids(retrieval_perform(bank=bank, query="sign in", task_id="task-8")) == [item.pk]
    assert ids(retrieval_perform(bank=bank, query="sign in")) == [item.pk]


def test_retrieval_is_logged_and_counts_served(bank, web_items):
    factories.make_token(bank, scopes=["retrieve"])
    token = ApiToken.objects.get(bank=bank)
    result = retrieval_perform(bank=bank, query="sign in to the shop", k=2, task_id="t-1", token=token)
    event = RetrievalEvent.objects.get(pk=result.event.pk)
    assert event.arm == Arm.TREATMENT and event.mode == "items" and event.k == 2 and event.task_id == "t-1"
    assert event.results == [{"id": str(item.public_id), "score": score} for item, score in result.items]
    assert event.latency_ms > 0 and event.token == token
    assert MemoryItem.objects.get(pk=web_items["login"].pk).served_count == 0  # nothing locked in the request
    assert memory_items_count_served() == 1  # folded later, once
    assert memory_items_count_served() == 0
    served = MemoryItem.objects.get(pk=web_items["login"].pk)
    assert served.served_count == 1 and served.last_served_at is not None
    assert MemoryItem.objects.get(pk=web_items["dates"].pk).served_count == (
        1 if web_items["dates"].pk in ids(result) else 0
    )


def test_pending_embeddings_are_counted_not_searched(bank, web_items):
    MemoryItem.objects.filter(pk=web_items["login"].pk).update(embedding=None, embedding_hash="")
    bank.min_similarity = -1.0
    result = retrieval_perform(bank=bank, query="sign in page", k=20)
    assert result.pending_embeddings == 1
    assert result.bank_has_approved
    assert web_items["login"].pk not in ids(result)
    # A vector whose text changed behind the services' back is not served either.
    MemoryItem.objects.filter(pk=web_items["pages"].pk).update(title="Changed title")
    assert web_items["pages"].pk not in ids(retrieval_perform(bank=bank, query="next page", k=20))


def test_experience_mode_serves_items_of_the_most_similar_task(bank, owner):
    bank.retrieval_mode = "experiences"
    bank.top_k = 1  # the paper's default: the single most similar past task
    bank.min_similarity = -1.0
    login_exp = experience_create(
        bank=bank, task="Log into the store account and list my past orders", task_id="t-login"
    )
    date_exp = experience_create(bank=bank, task="Book a flight leaving on March 3rd", task_id="t-date")
    empty_exp = experience_create(bank=bank, task="Log into the store account", task_id="t-empty")  # no approved item
    a = memory_item_propose(
        bank=bank,
        origin="success",
        experience=login_exp,
        source_task_id="t-login",
        title=PAGINATION[0],
        description=PAGINATION[1],
        content=PAGINATION[2],
    )
    b = memory_item_propose(
        bank=bank,
        origin="failure",
        experience=login_exp,
        source_task_id="t-login",
        title=LOGIN[0],
        description=LOGIN[1],
        content=LOGIN[2],
    )
    c = memory_item_propose(
        bank=bank,
        origin="success",
        experience=date_exp,
        source_task_id="t-date",
        title=DATE_PICKER[0],
        description=DATE_PICKER[1],
        content=DATE_PICKER[2],
    )
    unapproved = memory_item_propose(
        bank=bank, origin="success", experience=login_exp, title="Not yet reviewed", description="x", content="y"
    )
    memory_item_propose(
        bank=bank, origin="success", experience=empty_exp, title="Proposed only", description="x", content="y"
    )
    for item in (a, b, c):
        memory_item_approve(item=item, author=owner)

    result = retrieval_perform(bank=bank, query="sign into the shop and show my order history")
    assert result.event.mode == "experiences"
    assert sorted(ids(result)) == sorted([a.pk, b.pk])  # top-1 experience: all its approved items
    assert unapproved.pk not in ids(result)
    assert len({score for _, score in result.items}) == 1

    two = retrieval_perform(bank=bank, query="sign into the shop and show my order history", k=2)
    assert set(ids(two)) == {a.pk, b.pk, c.pk}
    assert ids(two)[-1] == c.pk  # the less similar experience comes last

    # Leave-one-task-out skips the experience of the same task.
    assert ids(
        retrieval_perform(bank=bank, query="sign into the shop and show my order history", task_id="t-login")
    ) == [c.pk]


def test_retrieval_query_count_does_not_grow_with_items(bank, approved, django_assert_max_num_queries):
    bank.min_similarity = -1.0
    approved(bank, *LOGIN)
    retrieval_perform(bank=bank, query="warm up the model")
    # Inside this test's transaction: a savepoint pair around the scan settings and the search (with its
    # counts), then the log: its SET LOCAL, the event and the tally. Outside one, the search and the log: 4
    # (tests/memories/test_retrieval_log.py).
    with django_assert_max_num_queries(7):
        few = retrieval_perform(bank=bank, query="sign in page", k=20)
    for texts in (PAGINATION, DATE_PICKER):
        approved(bank, *texts)
    approved(bank, "Read error banners", "Use after submitting a form.", "Error banners explain what field is wrong.")
    with django_assert_max_num_queries(7):
        many = retrieval_perform(bank=bank, query="sign in page", k=20)
    assert len(few.items) == 1 and len(many.items) == 4
    # What the API and the playground show of each item was fetched with it (SERVED_FIELDS): no query per item.
    with django_assert_max_num_queries(0):
        shown = [
            (i.public_id, i.title, i.description, i.content, i.origin, i.approved_at, i.tags) for i, _ in many.items
        ]
    assert [title for _, title, *_ in shown] == [item.title for item, _ in many.items] and all(s[5] for s in shown)


def test_iterative_scan_is_not_starved_by_other_banks(bank, crowded):
    """Force the HNSW index path: 150 items of another bank sit nearer the
    query than ours; without an iterative scan the first candidate list
    (ef_search) would hold none of ours."""
    query, ours = crowded
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(
            "EXPLAIN SELECT id FROM memories_memoryitem WHERE bank_id = %s AND status = 'approved' "
            "ORDER BY embedding <=> %s::vector LIMIT 3",
            [bank.pk, "[" + ",".join(str(x) for x in query) + "]"],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "memoryitem_embedding_hnsw" in plan
        # The control: a plain (non-iterative) HNSW scan is starved by the other bank.
        cursor.execute("SET LOCAL hnsw.iterative_scan = off")
        cursor.execute("SET LOCAL hnsw.ef_search = 40")
        cursor.execute(
            "SELECT id FROM memories_memoryitem WHERE bank_id = %s AND status = 'approved' "
            "ORDER BY embedding <=> %s::vector LIMIT 3",
            [bank.pk, "[" + ",".join(str(x) for x in query) + "]"],
        )
        assert len(cursor.fetchall()) < 3
    found = approved_items_search(bank=bank, vector=query, k=3, min_similarity=-1.0)
    assert sorted(item.pk for item, _ in found) == ours


def test_holdout_arm_withholds_items_but_records_them(bank, web_items):
    bank.holdout_fraction = 1.0
    result = retrieval_perform(bank=bank, query="sign in page", k=2)
    assert result.arm == Arm.HOLDOUT and result.items == [] and result.system_block == ""
    event = RetrievalEvent.objects.get(pk=result.event.pk)
    assert event.arm == Arm.HOLDOUT and event.holdout_fraction == 1.0  # the fraction it was drawn with
    assert event.results[0]["id"] == str(web_items["login"].public_id)  # what would have been served
    assert memory_items_count_served() == 1
    assert MemoryItem.objects.get(pk=web_items["login"].pk).served_count == 0
    bank.holdout_fraction = 0.0
    treated = retrieval_perform(bank=bank, query="sign in page", k=2)
    assert treated.arm == Arm.TREATMENT and treated.event.holdout_fraction == 0.0


def test_per_item_randomisation_leaves_items_out_on_their_own_and_records_them(bank, web_items):
    random.seed(20)
    bank.min_similarity, bank.item_holdout_fraction = -1.0, 0.5
    results = [retrieval_perform(bank=bank, query="sign in and walk the pages", k=3) for _ in range(12)]
    left_out = 0
    for result in results:
        event = RetrievalEvent.objects.get(pk=result.event.pk)
        served = {str(item.public_id) for item, _ in result.items}
        withheld = {str(item.public_id) for item in result.withheld}
        # The event records every candidate, which of them were left out, and the fraction in force.
        assert {entry["id"] for entry in event.results} == served | withheld and not served & withheld
        assert set(event.withheld) == withheld and event.item_holdout_fraction == 0.5
        assert event.arm == Arm.TREATMENT
        # The agent gets only the served items (fewer than k when some were left out).
        assert len(result.items) == 3 - len(withheld)
        for item in result.withheld:
            assert item.title not in result.system_block
        assert all(item.title in result.system_block for item, _ in result.items)
        left_out += len(withheld)
    assert 0 < left_out < 36  # some left out, not all
    # Each retrieval appended its row of the Impact report's sums, in the same transaction.
    tallies = RetrievalTally.objects.filter(bank=bank)
    assert sum(tallies.values_list("retrievals", flat=True)) == 12 == sum(tallies.values_list("triggered", flat=True))
    # Served counters count what the agents got, not what was left out.
    memory_items_count_served()
    served_total = sum(
        MemoryItem.objects.filter(pk__in=[i.pk for i in web_items.values()]).values_list("served_count", flat=True)
    )
    assert served_total == 36 - left_out


def test_no_per_item_randomisation_in_the_holdout_arm(bank, web_items):
    bank.min_similarity, bank.holdout_fraction, bank.item_holdout_fraction = -1.0, 1.0, 0.5
    result = retrieval_perform(bank=bank, query="sign in", k=3)
    event = RetrievalEvent.objects.get(pk=result.event.pk)
    assert event.arm == Arm.HOLDOUT and event.withheld == [] and len(event.results) == 3


@pytest.mark.django_db(transaction=True)
def test_the_log_commits_without_waiting_for_disk_and_nothing_else_does(bank, web_items):
    """The retrieval log and the rate-limit counter commit with synchronous_commit
    off (the answer does not wait for a WAL flush), and only their own
    transactions: the connection's next write waits for disk again."""
    factories.make_token(bank, scopes=["retrieve"])
    token = ApiToken.objects.get(bank=bank)

    def synchronous_commit() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]

    assert synchronous_commit() == "on"
    api_token_hit(token=token, limit=0)
    assert synchronous_commit() == "on"
    result = retrieval_perform(bank=bank, query="sign in to the shop", k=2, token=token)
    assert synchronous_commit() == "on"
    # …and what it wrote is committed: the tally and the fold see it.
    assert RetrievalEvent.objects.filter(pk=result.event.pk).exists()
    assert RetrievalTally.objects.filter(bank=bank).count() == 1
    assert memory_items_count_served() == 1
    assert MemoryItem.objects.get(pk=result.items[0][0].pk).served_count == 1


@pytest.mark.parametrize("duplicate_threshold", [None, 0.9])
@pytest.mark.parametrize("task_id", ["", "t-login"])
def test_the_compiled_search_is_the_query_the_orm_builds(bank, web_items, task_id, duplicate_threshold):
    """approved_items_search_counted runs a statement compiled once per bank and
    shape: with this call's vector and task id it is, byte for byte, the
    statement the ORM builds for it, and it finds what the ORM's query finds."""
    search = search_module
    vector = [random.uniform(-1, 1) for _ in range(384)]
    fetch = 20 if duplicate_threshold is not None else 10
    has_approved, pending = search._counts_expressions(bank=bank)
    qs = search._approved_items_qs(
        bank=bank,
        vector=vector,
        k=fetch,
        exclude_task_id=task_id,
        filters=NO_FILTERS,
        with_embedding=duplicate_threshold is not None,
    ).annotate(bank_has_approved=has_approved, bank_pending=pending)
    sql, params = qs.query.sql_with_params()
    if duplicate_threshold is not None:
        sql = search._similarities_sql(qs, sql, order=search.SEARCH_ORDER)
    compiled, marked = search._counted_search_sql(
        bank.pk, search.embedding_model_name(), fetch, duplicate_threshold is not None, bool(task_id)
    )
    filled = [
        search._vector_text(vector) if p is search._VECTOR else task_id if p is search._TASK else p for p in marked
    ]
    assert (compiled, filled) == (sql, list(params))
    found, counts = approved_items_search_counted(
        bank=bank, vector=vector, k=10, min_similarity=-1, exclude_task_id=task_id
    )
    orm = sorted(qs, key=lambda item: (item.distance, item.pk)) if duplicate_threshold is None else None
    if orm is not None:
        assert [item.pk for item, _ in found] == [item.pk for item in orm]
        assert (counts.has_approved, counts.pending) == (orm[0].bank_has_approved, orm[0].bank_pending)


def test_only_what_is_served_is_fetched(bank, web_items):
    """The search reads the fields the answer shows (SERVED_FIELDS): the dates,
    JSON and arrays it does not show stay in the database."""
    vector = [random.uniform(-1, 1) for _ in range(384)]
    found, _counts = approved_items_search_counted(bank=bank, vector=vector, k=10, min_similarity=-1)
    assert len(found) == 3 and isinstance(found[0][0].tags, list)
    served = {"id", *search_module.SERVED_FIELDS}
    assert found[0][0].get_deferred_fields() == {f.attname for f in MemoryItem._meta.concrete_fields} - served


def test_each_banks_search_serves_only_its_items_however_often_it_runs(crowded, bank, other_bank):
    """Another bank's items crowd the query; searched again and again (past
    PostgreSQL's five custom plans of a prepared statement), each bank's
    search still finds exactly its own."""
    query, ours = crowded
    for _ in range(7):
        theirs, _counts = approved_items_search_counted(bank=other_bank, vector=query, k=3, min_similarity=-1)
        assert len(theirs) == 3 and all(item.bank_id == other_bank.pk for item, _ in theirs)
    for _ in range(7):
        found, _counts = approved_items_search_counted(bank=bank, vector=query, k=3, min_similarity=-1)
        assert sorted(item.pk for item, _ in found) == ours
