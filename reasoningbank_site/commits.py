"""Commits that do not wait for the write-ahead log to reach the disk."""

from __future__ import annotations

from django.db import connection


def commit_without_waiting_for_disk() -> None:
    """Let the current transaction commit without waiting for its WAL flush
    (``SET LOCAL synchronous_commit = off``: it stays atomic and other
    sessions see it at once; only a crash of the database server in the next
    fraction of a second loses it whole). For a transaction whose loss costs
    nothing an agent sent: a retrieval's log, a pipeline stage's moves (the
    sweeper runs the stage again). The setting ends with the transaction.
    Call inside ``transaction.atomic``."""
    if not connection.in_atomic_block:
        raise RuntimeError("commit_without_waiting_for_disk() needs a transaction")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit = off")
