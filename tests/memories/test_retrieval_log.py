"""A retrieval's log (its RetrievalEvent and the tally row) is one transaction
of its own (SET LOCAL synchronous_commit, two INSERTs), committed before the
answer leaves: written exactly once, whole, and visible to every other
connection, with the instance the service returns matching the stored row."""

import json

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import TokenUsage
from memories.serving.models import Arm, RetrievalEvent, RetrievalTally
from memories.serving.retrieval import retrieval_perform

pytestmark = pytest.mark.django_db(transaction=True)


def _from_another_connection(sql, params=()):
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        return other.execute(sql, params).fetchall()


def test_each_retrieval_logs_one_event_and_one_tally_row_in_one_transaction(bank, approved):
    bank.min_similarity = -1.0
    item = approved(bank, "Sign in through the login form first", "Use when the task needs an account.", "Log in.")
    retrieval_perform(bank=bank, query="warm up", k=1)  # the connection and the model, not measured
    with CaptureQueriesContext(connection) as captured:
        result = retrieval_perform(bank=bank, query="open the sign in page", k=2, task_id="t-1")
    statements = [q["sql"] for q in captured.captured_queries]
    # The search (with its counts), then the log's transaction.
    assert [s.split(" (")[0] for s in statements[1:]] == [
        "BEGIN",
        "SET LOCAL synchronous_commit = off",
        'INSERT INTO "memories_retrievalevent"',
        'INSERT INTO "memories_retrievaltally"',
        "COMMIT",
    ], statements

    event = result.event
    rows = _from_another_connection(
        "SELECT id, public_id, created_at, query, task_id, k, arm, results::text FROM memories_retrievalevent "
        "WHERE bank_id = %s ORDER BY id",
        [bank.pk],
    )
    assert len(rows) == 2  # one per retrieval, committed
    pk, public_id, created_at, query, task_id, k, arm, results = rows[1]
    assert (pk, public_id, created_at) == (event.pk, event.public_id, event.created_at)
    assert (query, task_id, k, arm) == ("open the sign in page", "t-1", 2, Arm.TREATMENT)
    assert json.loads(results) == [{"id": str(item.public_id), "score": result.items[0][1]}]
    assert RetrievalEvent.objects.get(pk=event.pk).results == event.results

    tallies = _from_another_connection(
        "SELECT day, arm, retrievals, triggered FROM memories_retrievaltally WHERE bank_id = %s AND item IS NULL",
        [bank.pk],
    )
    assert sorted(tallies) == [(event.created_at.date(), Arm.TREATMENT, 1, 1)] * 2
    assert RetrievalTally.objects.filter(bank=bank).count() == 2


def test_a_retrieval_over_the_api_is_three_statements_and_a_log_and_logs_what_it_answered(client, auth, bank, approved):
    """POST /api/v1/retrieve: the token, its rate count, the search
    with its counts, the log (a transaction: SET LOCAL and two INSERTs) — and
    the logged event is the answer."""
    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    approved(bank, "Sign in through the login form first", "Use when the task needs an account.", "Log in.")
    approved(bank, "Type dates into date pickers", "Use when a form has a calendar.", "Type YYYY-MM-DD.")
    body = {"query": "open the sign in page", "k": 2}
    client.post("/api/v1/retrieve", data=body, content_type="application/json", **auth)  # token touched, warm
    with CaptureQueriesContext(connection) as captured:
        response = client.post("/api/v1/retrieve", data=body, content_type="application/json", **auth)
    assert response.status_code == 200, response.content
    statements = [q["sql"] for q in captured.captured_queries]
    assert len(statements) == 8, statements
    assert "accounts_apitoken" in statements[0] and "accounts_tokenusage" in statements[1]
    assert "memories_memoryitem" in statements[2]
    assert statements[3:5] == ["BEGIN", "SET LOCAL synchronous_commit = off"] and statements[-1] == "COMMIT"
    assert all(s.startswith("INSERT INTO") for s in statements[5:7])
    assert TokenUsage.objects.get(token__bank=bank).count == 2  # both requests checked and counted
    answer = response.json()
    event = RetrievalEvent.objects.get(public_id=answer["retrieval_id"])
    assert event.results == [{"id": item["id"], "score": item["score"]} for item in answer["items"]]
    assert (event.query, event.k, event.arm, event.withheld, event.filters) == (body["query"], 2, Arm.TREATMENT, [], {})
