"""The all-time per-item sums (RetrievalItemTotal): per bank, holdout
fraction, item and side, the sums of the bank's compacted per-item tally rows
of every day. Each writer that makes tally rows compacted adds what it
compacted, in its own transaction (``retrieval_tallies_compact``: the
appended rows it merged; the monthly roll-up: the appended rows it folded;
the rebuild: everything), so at any moment a bank's all-time per-item sums
are its totals plus its appended rows not yet compacted — items × sides rows
read instead of days × items (trajectories.impact.tallies.item_side_sums)."""

from __future__ import annotations

from collections import defaultdict

from django.db import connection

from memories.serving.models import RetrievalItemTotal, RetrievalTally

ITEM_SUMS = ("units", "y_sum", "judged", "successes")
ITEM_KEY = ("bank_id", "holdout_fraction", "item", "side")

# Rows (ITEM_KEY, ITEM_SUMS, one per key, in key order: concurrent writers
# lock the keys they share in the same order) added to the totals.
_ADD_SQL = """
INSERT INTO {totals} (bank_id, holdout_fraction, item, side, units, y_sum, judged, successes)
{rows}
ON CONFLICT ON CONSTRAINT item_total_key DO UPDATE SET
    units = {totals}.units + EXCLUDED.units, y_sum = {totals}.y_sum + EXCLUDED.y_sum,
    judged = {totals}.judged + EXCLUDED.judged, successes = {totals}.successes + EXCLUDED.successes
"""


def totals_add_sql(rows: str) -> str:
    """SQL adding ``rows`` (a SELECT of ITEM_KEY then ITEM_SUMS, one row per
    key) to the totals; the roll-up runs it as a step of its statement."""
    return _ADD_SQL.format(totals=RetrievalItemTotal._meta.db_table, rows=rows)


def item_totals_add(rows: list[dict]) -> None:
    """Add the per-item tally rows among ``rows`` (dicts with ITEM_KEY and
    ITEM_SUMS; arm rows, item None, are skipped) to the totals."""
    sums: dict[tuple, list] = defaultdict(lambda: [0, 0.0, 0, 0])
    for row in rows:
        if row["item"] is not None:
            total = sums[tuple(row[k] for k in ITEM_KEY)]
            for i, name in enumerate(ITEM_SUMS):
                total[i] += row[name]
    if not sums:
        return
    keys = sorted(sums, key=lambda k: (k[0], k[1] is None, k[1] or 0.0, str(k[2]), k[3]))
    select = (
        "SELECT * FROM unnest(%s::bigint[], %s::float8[], %s::uuid[], %s::text[],"
        " %s::bigint[], %s::float8[], %s::bigint[], %s::bigint[]) WITH ORDINALITY"
    )
    columns = [[key[i] for key in keys] for i in range(len(ITEM_KEY))]
    columns += [[sums[key][i] for key in keys] for i in range(len(ITEM_SUMS))]
    rows_sql = f"SELECT b, f, i, s, u, y, j, n FROM ({select}) AS v(b, f, i, s, u, y, j, n, o) ORDER BY o"
    with connection.cursor() as cursor:
        cursor.execute(totals_add_sql(rows_sql), columns)


def item_totals_rebuild(*, bank_id: int) -> None:
    """Replace a bank's totals with the sums of its compacted per-item tally rows."""
    RetrievalItemTotal.objects.filter(bank_id=bank_id).delete()
    rows = (
        f"SELECT bank_id, holdout_fraction, item, side, SUM(units), SUM(y_sum), SUM(judged), SUM(successes)"
        f" FROM {RetrievalTally._meta.db_table} WHERE bank_id = %s AND item IS NOT NULL AND compacted"
        " GROUP BY bank_id, holdout_fraction, item, side"
    )
    with connection.cursor() as cursor:
        cursor.execute(totals_add_sql(rows), [bank_id])
