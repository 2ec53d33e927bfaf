"""A web worker keeps its database connection between requests (CONN_MAX_AGE,
on the embedded server too: a new connection per request slows every retrieval),
and a connection broken behind its back — the database restarted, the backend
killed — is replaced by the health check on the next request, never reused
into an error. Real gunicorn (one sync worker, as in production) serving the
test database."""

import select
from unittest import mock

import psycopg
import pytest
import requests
from django.db import connection

from tests import factories
from tests.helpers import gunicorn_serving, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def gunicorn():
    # One sync worker, as in production; this test is about connections, not the model.
    proc, base = gunicorn_serving("-w", "1", env={"RB_EMBEDDING_PRELOAD": "0"})
    try:
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _server_backends(besides: frozenset[int] = frozenset()) -> list[int]:
    """The backend pids connected to the test database other than this test's own and ``besides``
    (sessions other tests left open, e.g. the session-wide live server's thread)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend' ORDER BY pid"
        )
        return [pid for (pid,) in cursor.fetchall() if pid not in besides]


def test_a_worker_keeps_its_connection_and_replaces_a_broken_one(gunicorn, bank):
    token = factories.make_token(bank, scopes=["retrieve"])
    url, headers = f"{gunicorn}/api/v1/memories?limit=1", {"Authorization": f"Bearer {token}"}

    # gunicorn_serving asked /healthz, which does not touch the database: any session now is another test's.
    others = frozenset(_server_backends())
    assert requests.get(url, headers=headers, timeout=30).status_code == 200
    first = _server_backends(others)
    assert len(first) == 1  # kept open after the request
    assert requests.get(url, headers=headers, timeout=30).status_code == 200
    assert _server_backends(others) == first  # and reused by the next one

    # The database drops the connection (what a restart does to it): the next request still succeeds.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", first)
    response = requests.get(url, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["count"] == 0
    replaced = _server_backends(others)
    assert len(replaced) == 1 and replaced != first


def test_the_health_check_asks_the_server_only_when_the_connection_heard_from_it(db):
    """The health check (reasoningbank_site/postgres) costs no round trip on a
    quiet connection, and still finds one the server terminated."""
    connection.ensure_connection()
    raw = connection.connection
    with mock.patch.object(type(raw), "cursor", side_effect=AssertionError("the health check made a round trip")):
        assert connection.is_usable()
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [raw.info.backend_pid])
    wait_for(lambda: select.select([raw.fileno()], [], [], 0.1)[0], timeout=60, what="the termination message")
    assert not connection.is_usable()
    connection.close()
