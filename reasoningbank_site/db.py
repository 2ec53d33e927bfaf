"""Small database helpers shared by the apps' services."""

from __future__ import annotations

from django.db import connection


def commit_without_waiting_for_disk() -> None:
    """Inside a transaction: let its COMMIT return before its WAL is flushed
    to disk (``synchronous_commit = off`` for this transaction only). The
    transaction stays atomic and is durable within ~3 × wal_writer_delay; a
    crash of the database server (not of the app) in that window loses it
    whole. For bookkeeping on a request's critical path (the retrieval log),
    never for what a client was promised is stored."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")
