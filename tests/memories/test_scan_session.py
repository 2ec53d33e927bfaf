"""The vector-scan settings (iterative scan, ef_search, no JIT) are session
defaults of every database connection, set once when it opens, so a
retrieval's search is one statement instead of BEGIN, set_config, search,
COMMIT. They must hold on a connection that replaced one the
database dropped, and a connection that did not get them is never trusted."""

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.serving.search import HNSW_EF_SEARCH, approved_items_search_counted

pytestmark = pytest.mark.django_db(transaction=True)


def _force_index_scan():
    # Session level (no transaction here): the planner would sort 153 rows exactly instead.
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off; SET enable_sort = off; SET enable_bitmapscan = off")


def _search(bank, query):
    with CaptureQueriesContext(connection) as captured:
        found = approved_items_search_counted(bank=bank, vector=query, k=3, min_similarity=-1.0)[0]
    return sorted(item.pk for item, _ in found), [q["sql"] for q in captured.captured_queries]


def _session_settings():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan'), current_setting('jit')"
        )
        return cursor.fetchone()


def test_a_search_is_one_statement_with_the_settings_in_force(bank, crowded):
    query, ours = crowded
    _force_index_scan()
    found, statements = _search(bank, query)
    assert found == ours  # not starved by the other bank: the iterative scan was in force
    assert len(statements) == 1 and "set_config" not in statements[0]
    assert _session_settings() == (str(HNSW_EF_SEARCH), "relaxed_order", "off")


def test_a_replaced_connection_gets_the_settings_again(bank, crowded):
    query, ours = crowded
    _search(bank, query)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (first,) = cursor.fetchone()
    # The database drops the connection (a restart, an admin), from outside.
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [first])
    connection.close()  # what the health check does at the next request
    _force_index_scan()
    found, statements = _search(bank, query)
    assert found == ours and len(statements) == 1 and "set_config" not in statements[0]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != first
    assert _session_settings() == (str(HNSW_EF_SEARCH), "relaxed_order", "off")


def test_a_connection_without_the_settings_is_not_trusted(bank, crowded):
    query, ours = crowded
    _search(bank, query)
    # As if the session defaults were lost (a RESET, a pooler handing over another session).
    with connection.cursor() as cursor:
        cursor.execute("RESET hnsw.iterative_scan; RESET hnsw.ef_search")
    connection.hnsw_session = None
    _force_index_scan()
    found, statements = _search(bank, query)
    assert found == ours
    assert any("set_config" in sql for sql in statements)  # set locally, in a transaction
