"""The bank's trajectory counts, maintained instead of recounted: signed delta
rows of (bank, UTC day of arrival, status, verdict) written by PostgreSQL
triggers on every trajectory write that moves a row's key, merged by a beat task
(counts_compact), summed on read. The dashboard's counts per status and its
success-rate chart read them, never the bank's every trajectory.

The triggers (declared with django-pgtrigger in Trajectory's Meta) fire on
INSERT and DELETE (per statement) and UPDATE OF the key's columns (per row), so ingest, the pipeline's bulk
updates, relabels, deletions, a bank's deletion and any later write path are
counted with no code on the path; a write that leaves the key as it was (the
status detail, a retry counter) adds nothing."""

from __future__ import annotations

import pgtrigger
from django.db import connection, transaction

TABLE = "trajectories_trajectorycount"

_DAY = "(({row}.created_at AT TIME ZONE 'UTC')::date)"
_KEY = f"{{row}}.bank_id, {_DAY}, {{row}}.status, {{row}}.verdict"
_INTO = f"INSERT INTO {TABLE} (bank_id, day, status, verdict, n)"


def _statement_func(rows: str, sign: str) -> str:
    """An INSERT or DELETE statement's rows (its transition table), one delta row per key."""
    return f"""
{_INTO}
SELECT {_KEY.format(row="r")}, {sign}COUNT(*) FROM {rows} r GROUP BY 1, 2, 3, 4;
RETURN NULL;
"""


# A row whose key moved: -1 for the old key, +1 for the new (the trigger's WHEN clause skips the rest).
_MOVE_FUNC = f"""
{_INTO} VALUES ({_KEY.format(row="OLD")}, -1), ({_KEY.format(row="NEW")}, 1);
RETURN NULL;
"""


def count_triggers() -> list[pgtrigger.Trigger]:
    """Inserts and deletes are counted per statement (a bulk insert or a bank's deletion writes one row per
    key, not per trajectory); an UPDATE of the key's columns per row, only when the key changed."""
    moved = " OR ".join(f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in ("bank_id", "status", "verdict"))
    moved += f" OR {_DAY.format(row='OLD')} IS DISTINCT FROM {_DAY.format(row='NEW')}"
    return [
        pgtrigger.Trigger(
            name="trajectory_counts_insert",
            when=pgtrigger.After,
            operation=pgtrigger.Insert,
            level=pgtrigger.Statement,
            referencing=pgtrigger.Referencing(new="new_rows"),
            func=_statement_func("new_rows", ""),
        ),
        pgtrigger.Trigger(
            name="trajectory_counts_delete",
            when=pgtrigger.After,
            operation=pgtrigger.Delete,
            level=pgtrigger.Statement,
            referencing=pgtrigger.Referencing(old="old_rows"),
            func=_statement_func("old_rows", "-"),
        ),
        pgtrigger.Trigger(
            name="trajectory_counts_move",
            when=pgtrigger.After,
            operation=pgtrigger.UpdateOf("status", "verdict", "bank_id", "created_at"),
            condition=pgtrigger.Condition(moved),
            func=_MOVE_FUNC,
        ),
    ]


# Fills the table from the trajectories as they are (the migration that adds the trigger).
FILL_SQL = f"""
INSERT INTO {TABLE} (bank_id, day, status, verdict, n)
SELECT bank_id, (created_at AT TIME ZONE 'UTC')::date, status, verdict, COUNT(*)
FROM trajectories_trajectory GROUP BY 1, 2, 3, 4
"""

# One statement: the rows up to a given id are deleted and their sums per key written back (zero sums
# dropped). DELETE ... RETURNING yields exactly the rows this transaction removed: a row a concurrent
# compaction removed first is skipped, rows the trigger adds meanwhile are past the id, so no delta is lost
# or counted twice.
_COMPACT_SQL = f"""
WITH gone AS (DELETE FROM {TABLE} WHERE id <= %s RETURNING bank_id, day, status, verdict, n)
INSERT INTO {TABLE} (bank_id, day, status, verdict, n)
SELECT bank_id, day, status, verdict, SUM(n) FROM gone
GROUP BY bank_id, day, status, verdict HAVING SUM(n) <> 0
"""


def counts_compact() -> int:
    """Merge the delta rows into one row per key and drop keys that sum to
    zero (a deleted bank's leave nothing); return the rows left. Runs from beat."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT MAX(id) FROM {TABLE}")
        (last,) = cursor.fetchone()
        if last is None:
            return 0
        cursor.execute(_COMPACT_SQL, [last])
        return cursor.rowcount
