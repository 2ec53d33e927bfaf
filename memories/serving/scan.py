"""The HNSW index scan's settings: how far it searches, and where they are set."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from memories.serving import NO_FILTERS, RetrievalFilters

# Candidate list of the HNSW scan; at least a few times k so relaxed-order
# iterative scans return the true neighbours (bench/retrieval_recall.py measures
# recall and cost per value). Recall at a given value varies from one index build
# to the next: at 100k items, 200 gave 0.988 on one build and 0.964 on another, 400
# gave 0.990, 0.984 and 0.978 on three builds, and 600 gave 0.996 on the build where
# 400 gave 0.978 (+1.6 ms a search: 9.6 against 8.0). Under a filter the scan keeps
# going until k items pass it (iterative scan), and the 1% tag filter measured 1.000 at 200.
HNSW_EF_SEARCH = 600
HNSW_EF_SEARCH_FILTERED = 200


def hnsw_iterative_scan(*, ef_search: int) -> None:
    """Inside the current transaction: let the HNSW scan keep going until the
    bank/status filter leaves enough rows (pgvector ≥ 0.8), instead of
    returning fewer rows when other banks crowd the first candidate list;
    and no JIT compilation for these short index scans (its cost estimate
    can cross ``jit_above_cost`` on a large table, and compiling takes longer
    than the scan). One round trip."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', %s, true),"
            " set_config('jit', 'off', true)",
            [str(int(ef_search))],
        )


def hnsw_session_settings(sender, connection, **kwargs) -> None:
    """``connection_created`` receiver (memories.apps): give every new
    database connection the scan settings of hnsw_iterative_scan with
    ef_search HNSW_EF_SEARCH as its session defaults, once, so a search with
    those settings needs neither a transaction nor a set_config round trip
    (hnsw_scan). Records which raw connection got them: a connection replaced
    later (health check, database restart) runs this again, and one that did
    not is never trusted."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false),"
            " set_config('hnsw.ef_search', %s, false), set_config('jit', 'off', false)",
            [str(HNSW_EF_SEARCH)],
        )
    connection.hnsw_session = connection.connection


@contextmanager
def hnsw_scan(*, ef_search: int) -> Iterator[None]:
    """Run the vector searches inside with hnsw_iterative_scan's settings.
    Outside a transaction, on a connection that got them as session defaults
    (hnsw_session_settings) and with that ef_search, as is: one statement, no
    BEGIN/set_config/COMMIT round trips. Otherwise (another ef_search, or
    inside a transaction, whose SET LOCALs may differ) in a transaction that
    sets them locally."""
    connection.ensure_connection()
    if (
        ef_search == HNSW_EF_SEARCH
        and not connection.in_atomic_block
        and getattr(connection, "hnsw_session", None) is connection.connection
    ):
        yield
        return
    with transaction.atomic():
        hnsw_iterative_scan(ef_search=ef_search)
        yield


def hnsw_ef_search(*, k: int, filters: RetrievalFilters = NO_FILTERS) -> int:
    """The HNSW candidate list for a search of ``k`` items: HNSW_EF_SEARCH, or
    HNSW_EF_SEARCH_FILTERED when ``filters`` narrow it, and at least 4·k."""
    return max(HNSW_EF_SEARCH_FILTERED if filters else HNSW_EF_SEARCH, 4 * k)
