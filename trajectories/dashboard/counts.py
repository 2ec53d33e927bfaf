"""The bank's trajectory counts, maintained instead of recounted: signed delta
rows of (bank, UTC day of arrival, status, verdict) written by a PostgreSQL
trigger on every trajectory write that moves a row's key, merged by a beat task
(counts_compact), summed on read. The dashboard's counts per status and its
success-rate chart read them, never the bank's every trajectory.

The trigger (declared with django-pgtrigger in Trajectory's Meta) fires on
INSERT, DELETE and UPDATE OF the key's columns, so ingest, the pipeline's bulk
updates, relabels, deletions, a bank's deletion and any later write path are
counted with no code on the path; a write that leaves the key as it was (the
retention purge, a retry counter) adds nothing."""

from __future__ import annotations

import pgtrigger
from django.db import connection, transaction

TABLE = "trajectories_trajectorycount"

_DAY = "(({row}.created_at AT TIME ZONE 'UTC')::date)"
_KEY = f"{{row}}.bank_id, {_DAY}, {{row}}.status, {{row}}.verdict"

COUNT_TRIGGER_FUNC = f"""
IF TG_OP = 'UPDATE' AND OLD.bank_id = NEW.bank_id AND OLD.status = NEW.status
   AND OLD.verdict = NEW.verdict AND {_DAY.format(row="OLD")} = {_DAY.format(row="NEW")} THEN
    RETURN NULL;
END IF;
IF TG_OP IN ('UPDATE', 'DELETE') THEN
    INSERT INTO {TABLE} (bank_id, day, status, verdict, n) VALUES ({_KEY.format(row="OLD")}, -1);
END IF;
IF TG_OP IN ('UPDATE', 'INSERT') THEN
    INSERT INTO {TABLE} (bank_id, day, status, verdict, n) VALUES ({_KEY.format(row="NEW")}, 1);
END IF;
RETURN NULL;
"""


def count_trigger() -> pgtrigger.Trigger:
    return pgtrigger.Trigger(
        name="trajectory_counts",
        when=pgtrigger.After,
        operation=pgtrigger.Insert
        | pgtrigger.Delete
        | pgtrigger.UpdateOf("status", "verdict", "bank_id", "created_at"),
        func=COUNT_TRIGGER_FUNC,
    )


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
