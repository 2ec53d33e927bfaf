"""A retrieval's log (its RetrievalEvent and the tally row) is one statement
of its own (issue 14: it was BEGIN, SET LOCAL, two INSERTs, COMMIT), sent
before the answer leaves and read once the response is sent (over the API):
written exactly once, whole, and visible to every other connection, with the
instance the service returns matching the stored row."""

import io
import json

import psycopg
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import Arm, RetrievalEvent, RetrievalTally
from memories.services import retrieval_perform
from reasoningbank_site.db import insert_without_waiting_for_disk

pytestmark = pytest.mark.django_db(transaction=True)


def _from_another_connection(sql, params=()):
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        return other.execute(sql, params).fetchall()


def test_each_retrieval_logs_one_event_and_one_tally_row_in_one_statement(bank, approved):
    bank.min_similarity = -1.0
    item = approved(bank, "Sign in through the login form first", "Use when the task needs an account.", "Log in.")
    retrieval_perform(bank=bank, query="warm up", k=1)  # the connection and the model, not measured
    with CaptureQueriesContext(connection) as captured:
        result = retrieval_perform(bank=bank, query="open the sign in page", k=2, task_id="t-1")
    statements = [q["sql"] for q in captured.captured_queries]
    assert len(statements) == 2  # the search (with its counts) and the log
    assert "INSERT INTO" in statements[1] and "synchronous_commit" in statements[1]

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


def test_a_retrieval_over_the_api_is_three_statements_and_logs_what_it_answered(client, auth, bank, approved):
    """POST /api/v1/retrieve: the token check with its rate count, the search
    with its counts, the log (issue 14) — and the logged event is the answer."""
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
    assert len(statements) == 3, statements
    assert "accounts_tokenusage" in statements[0] and "INSERT INTO" in statements[2]
    answer = response.json()
    event = RetrievalEvent.objects.get(public_id=answer["retrieval_id"])
    assert event.results == [{"id": item["id"], "score": item["score"]} for item in answer["items"]]
    assert (event.query, event.k, event.arm, event.withheld, event.filters) == (body["query"], 2, Arm.TREATMENT, [], {})


def _wsgi_post(path, body, auth):
    """POST through Django's WSGI handler as a WSGI server calls it: the answer, then close() once it is sent."""
    data = json.dumps(body).encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        **auth,
    }
    status = []
    response = WSGIHandler()(environ, lambda s, headers: status.append(s))
    return status[0], b"".join(response), response


def test_the_log_is_sent_before_the_answer_and_read_once_it_is_sent(bank, approved, auth):
    """The log statement leaves for the database before the answer leaves the
    application, and its answer is read when the response is closed (issue
    14: its round trip is no longer part of the agent's wait); the event is
    then stored whole, and the next statement on the connection finds the
    connection ready."""
    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    approved(bank, "Sign in through the login form first", "Use when the task needs an account.", "Log in.")
    status, answer, response = _wsgi_post("/api/v1/retrieve", {"query": "open the sign in page", "k": 1}, auth)
    assert status.startswith("200"), answer
    unread = connection.unread_statement  # sent, its answer not read yet: the event and its tally row
    assert [type(obj) for obj in unread] == [RetrievalEvent, RetrievalTally] and unread[0].pk is None
    response.close()  # the server has sent the answer
    assert connection.unread_statement is None and unread[0].pk is not None
    retrieval_id = json.loads(answer)["retrieval_id"]
    assert _from_another_connection("SELECT id FROM memories_retrievalevent WHERE public_id = %s", [retrieval_id]) == [
        (unread[0].pk,)
    ]

    # A response never closed: the connection's next statement reads the answer first.
    status, answer, _never_closed = _wsgi_post("/api/v1/retrieve", {"query": "sign in", "k": 1}, auth)
    assert status.startswith("200") and connection.unread_statement is not None
    assert RetrievalEvent.objects.filter(public_id=json.loads(answer)["retrieval_id"]).count() == 1
    assert connection.unread_statement is None


def test_a_statement_read_later_survives_a_callers_execute_wrapper_and_a_closed_connection(bank):
    """The next statement reads the unread answer even inside a caller's
    ``connection.execute_wrapper`` (which pops the last wrapper on leaving),
    and a connection closed with an answer unread leaves nothing behind."""
    seen = []
    connection.results_read_later = True  # what StatementResultsMiddleware sets for a request
    try:
        with connection.execute_wrapper(lambda execute, *args: seen.append(1) or execute(*args)):
            event = RetrievalEvent(bank=bank, query="q", k=1, mode="items", arm=Arm.TREATMENT, results=[])
            insert_without_waiting_for_disk(event, read_later=True)
        assert event.pk is None and seen == []
        assert RetrievalEvent.objects.filter(bank=bank).count() == 1 and event.pk is not None
        assert seen == [] and connection.execute_wrappers == []  # the caller's wrapper left with its block

        lost = RetrievalEvent(bank=bank, query="q2", k=1, mode="items", arm=Arm.TREATMENT, results=[])
        insert_without_waiting_for_disk(lost, read_later=True)
        connection.close()
        assert RetrievalEvent.objects.filter(bank=bank).count() in (1, 2)  # a new connection, no error
        assert connection.unread_statement is None and connection.execute_wrappers == []
    finally:
        connection.results_read_later = False
