"""The Impact report's old history by month: the daily tallies
(RetrievalTally) of whole months older than ROLLUP_AFTER_DAYS merged into one
``monthly`` row per key (bank, holdout fraction, arm, item, side), its ``day``
the month's last day, so an all-time report reads months × items for old
history instead of days × items. Rows of different holdout fractions are
never merged (the fraction is part of the key). Run by the compaction's beat
task after it merges the day's appended rows; a retrieval's late verdict
change appends a daily row that the next run folds into its month."""

from __future__ import annotations

from datetime import date, timedelta

from django.db import connection
from django.db.models.functions import TruncMonth
from django.utils import timezone

from memories.serving.item_totals import totals_add_sql
from memories.serving.models import RetrievalTally
from memories.serving.tallies import SUMS

ROLLUP_AFTER_DAYS = 90
"""Days kept one row per day (the Impact page's 7/30/90-day windows read only those)."""


def month_end(day: date) -> date:
    """The last day of ``day``'s month."""
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)


def month_start(day: date) -> date:
    return day.replace(day=1)


def rollup_before(today: date) -> date:
    """Daily rows before this day are rolled up: the first day of the month
    of ``today`` − ROLLUP_AFTER_DAYS, so only whole months are."""
    return month_start(today - timedelta(days=ROLLUP_AFTER_DAYS))


_FOLD_SQL = """
WITH gone AS (
    DELETE FROM {tally} WHERE id IN (
        SELECT id FROM {tally}
        WHERE bank_id = %(bank)s AND ((NOT monthly AND day >= %(start)s AND day <= %(end)s)
                                      OR (monthly AND day = %(end)s))
        FOR UPDATE SKIP LOCKED
    )
    RETURNING *
), folded AS (
    INSERT INTO {tally} (bank_id, day, holdout_fraction, arm, item, side, {sums}, compacted, monthly)
    SELECT bank_id, %(end)s, holdout_fraction, arm, item, side, {totals}, true, true
    FROM gone GROUP BY bank_id, holdout_fraction, arm, item, side
    HAVING {nonzero}
), added AS (  -- the appended rows folded are compacted now: the all-time totals hold them
    {add_appended}
)
SELECT COUNT(*) FILTER (WHERE NOT monthly) FROM gone
"""


_APPENDED_ITEM_SUMS = """
    SELECT bank_id, holdout_fraction, item, side, SUM(units), SUM(y_sum), SUM(judged), SUM(successes)
    FROM gone WHERE NOT compacted AND item IS NOT NULL
    GROUP BY bank_id, holdout_fraction, item, side ORDER BY holdout_fraction, item, side"""


def _month_fold(bank_id: int, month: date) -> int:
    """One bank's month: its daily rows and its earlier monthly rows replaced
    by one monthly row per key, in one statement (rows another run holds are
    skipped and folded next time)."""
    sql = _FOLD_SQL.format(
        tally=RetrievalTally._meta.db_table,
        sums=", ".join(SUMS),
        totals=", ".join(f"SUM({name})" for name in SUMS),
        nonzero=" OR ".join(f"SUM({name}) <> 0" for name in SUMS),
        add_appended=totals_add_sql(_APPENDED_ITEM_SUMS),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, {"bank": bank_id, "start": month_start(month), "end": month_end(month)})
        return cursor.fetchone()[0]


def retrieval_tallies_roll_up(*, today: date | None = None) -> int:
    """Fold the daily rows of whole months older than ROLLUP_AFTER_DAYS into
    their month's row, one statement per bank and month; returns how many
    daily rows were folded. Exact: a statement deletes rows and inserts
    their sums per key, or (failing) does neither."""
    before = rollup_before(today or timezone.now().date())
    months = (
        RetrievalTally.objects.filter(monthly=False, day__lt=before)
        .annotate(month=TruncMonth("day"))
        .values_list("bank_id", "month")
        .distinct()
    )
    return sum(_month_fold(bank_id, month) for bank_id, month in list(months))
