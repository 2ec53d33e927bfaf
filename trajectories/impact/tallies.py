"""Reads of the Impact report's maintained sums (memories.RetrievalTally,
written by memories.serving.tallies): the holdout-fraction period to
compare, and the period's sums per arm and per item and side. A few rows per
day and item, so nothing here reads the trajectories, and each query reads at
most a day of retrievals."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Q

from accounts.models import Bank
from memories.serving.models import Arm, ItemSide, RetrievalEvent, RetrievalItemTotal, RetrievalTally
from memories.serving.rollups import month_end, month_start
from trajectories.impact.arms import ArmStats, percent


@dataclass
class Period:
    """The holdout-fraction period analysed: retrievals assigned with
    ``fraction`` (None: recorded before fractions were), created after
    ``after`` (None: from the first). ``excluded`` retrievals of the window
    belong to other periods and are not compared."""

    fraction: float | None = None
    after: datetime | None = None
    excluded: int = 0
    first_day: date | None = None  # the first UTC day summed (the day of ``after``, or the next day or month)

    @property
    def fraction_pct(self) -> float | None:
        return percent(self.fraction)


def window_days(since: datetime | None, until: datetime | None) -> tuple[date | None, date | None]:
    """The window as whole UTC days: [first, last) (a partial day at ``since``
    counts whole; one at ``until`` does not). A rolled-up month is dated by
    its last day, so the same rule holds for months: one partly in the window
    counts whole when the window starts in it, not when the window ends in it."""
    return (
        since.astimezone(UTC).date() if since is not None else None,
        until.astimezone(UTC).date() if until is not None else None,
    )


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def _tallies(bank: Bank, first: date | None, last: date | None):
    tallies = RetrievalTally.objects.filter(bank=bank)
    if first is not None:
        tallies = tallies.filter(day__gte=first)
    if last is not None:
        tallies = tallies.filter(day__lt=last)
    return tallies


def _same_fraction(fraction: float | None) -> Q:
    return Q(holdout_fraction__isnull=True) if fraction is None else Q(holdout_fraction=fraction)


def _bucket_bounds(day: date, monthly: bool) -> tuple[datetime, datetime]:
    """The moments a tally row covers: its day, or (a rolled-up month, dated by its last day) its month."""
    start, end = _day_bounds(day)
    return (datetime.combine(month_start(day), time.min, tzinfo=UTC), end) if monthly else (start, end)


def latest_period(bank: Bank, first: date | None, last: date | None) -> Period | None:
    """The latest holdout-fraction period of the window with a holdout (or
    with fractions not recorded); None when every retrieval of the window was
    assigned with fraction 0. The days come from the tallies and the exact
    moments from that day's retrievals (a rolled-up month's: its month's), so
    every query reads at most a day (a month) of retrievals (the index on
    bank, created_at). A period starts at ``after``, the last change; when
    that day (that rolled-up month) also had retrievals of an earlier period
    with the same fraction (A → B → A in one day), it starts at the next
    midnight (the next month) instead, since a row's sums cannot be split."""
    arm_rows = _tallies(bank, first, last).filter(item__isnull=True, retrievals__gt=0)
    holdout_on = Q(holdout_fraction__isnull=True) | Q(holdout_fraction__gt=0)
    latest_row = arm_rows.filter(holdout_on).order_by("-day", "-monthly").values_list("day", "monthly").first()
    if latest_row is None:
        return None
    start, end = _bucket_bounds(*latest_row)
    events = RetrievalEvent.objects.filter(bank=bank)
    latest = (
        events.filter(holdout_on, created_at__gte=start, created_at__lt=end)
        .order_by("-created_at", "-id")
        .values_list("holdout_fraction", "created_at")
        .first()
    )
    if latest is None:  # tallies without their retrievals (deleted): nothing to compare
        return None
    fraction, at = latest
    other_rows = (
        arm_rows.filter(day__lte=latest_row[0])
        .exclude(_same_fraction(fraction))
        .order_by("-day", "-monthly")
        .values_list("day", "monthly")
        .distinct()[:3]
    )
    boundary, in_month = None, False
    for row in other_rows:  # the latest day may hold other fractions only after `at`: then the day before
        row_start, row_end = _bucket_bounds(*row)
        boundary = (
            events.filter(created_at__gte=row_start, created_at__lt=min(row_end, at))
            .exclude(_same_fraction(fraction))
            .order_by("-created_at")
            .values_list("created_at", flat=True)
            .first()
        )
        if boundary is not None:
            in_month = row[1]
            break
    period = Period(fraction=fraction, after=boundary)
    if boundary is not None:
        day = boundary.astimezone(UTC).date()
        bucket_start, bucket_end = _bucket_bounds(month_end(day), True) if in_month else _day_bounds(day)
        period.first_day = day
        if events.filter(_same_fraction(fraction), created_at__gte=bucket_start, created_at__lt=boundary).exists():
            period.first_day, period.after = bucket_end.date(), bucket_end
    return period


def _in_period(period: Period | None, params: dict) -> str:
    """SQL: whether a tally row belongs to ``period`` (fills ``params``)."""
    if period is None:
        return "true"
    condition = "holdout_fraction IS NULL" if period.fraction is None else "holdout_fraction = %(fraction)s"
    params["fraction"] = period.fraction
    if period.first_day is not None:
        condition += " AND day >= %(first_day)s"
        params["first_day"] = period.first_day
    return condition


def _window_sql(first: date | None, last: date | None, params: dict) -> str:
    where = "bank_id = %(bank)s"
    if first is not None:
        where += " AND day >= %(first)s"
        params["first"] = first
    if last is not None:
        where += " AND day < %(last)s"
        params["last"] = last
    return where


def _period_rows(template: str, bank: Bank, first: date | None, last: date | None, period: Period | None) -> list:
    """The rows of one of the sums below (``template``) over the bank's tallies in the window and period."""
    params = {"bank": bank.pk}
    sql = template.format(
        tally=RetrievalTally._meta.db_table,
        totals=RetrievalItemTotal._meta.db_table,
        window=_window_sql(first, last, params),
        in_period=_in_period(period, params),
    )
    return report_rows(sql, params)


def report_rows(sql: str, params: dict) -> list:
    """The rows of a reporting aggregate, run with RB_REPORT_WORK_MEM of
    memory for its hash aggregate (a spill to disk is what made the report
    slow on a big bank): ``SET LOCAL`` and the query go in one round trip,
    one implicit transaction, so the setting ends with the query."""
    params = {**params, "report_work_mem": settings.RB_REPORT_WORK_MEM}
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL work_mem = %(report_work_mem)s; " + sql, params)
        cursor.nextset()
        return cursor.fetchall()


# Per arm: the window's tallies split into the period's and the others
# (whose retrievals are only counted as excluded).
_ARMS_SQL = """
SELECT arm, ({in_period}) AS in_period,
       SUM(retrievals), SUM(triggered), SUM(units), SUM(y_sum), SUM(y_sq_sum),
       SUM(trajectories), SUM(judged), SUM(successes), SUM(steps),
       SUM(usage_runs), SUM(usage_successes), SUM(prompt_tokens), SUM(completion_tokens),
       SUM(memory_blocks), SUM(memory_tokens)
FROM {tally}
WHERE {window} AND item IS NULL
GROUP BY 1, 2
"""


def arm_sums(bank: Bank, first: date | None, last: date | None, period: Period | None) -> tuple[dict, int]:
    """The period's arms, and how many of the window's retrievals are outside it."""
    rows = _period_rows(_ARMS_SQL, bank, first, last, period)
    arms = {Arm.TREATMENT.value: ArmStats(arm=Arm.TREATMENT.value), Arm.HOLDOUT.value: ArmStats(arm=Arm.HOLDOUT.value)}
    excluded = 0
    for row in rows:
        arm, in_period, retrievals, triggered, units, y_sum, y_sq_sum, trajectories, judged, successes, steps = row[:11]
        if not in_period:
            excluded += retrievals
        elif arm in arms:
            stats = arms[arm]
            stats.retrievals, stats.triggered, stats.units = retrievals, triggered, units
            stats.y_sum, stats.y_sq_sum = float(y_sum), max(0.0, float(y_sq_sum))
            stats.trajectories, stats.judged, stats.successes = trajectories, judged, successes
            stats.steps_sum, stats.steps_n = int(steps), judged
            (stats.usage_runs, stats.usage_successes, stats.prompt_tokens, stats.completion_tokens) = map(
                int, row[11:15]
            )
            stats.memory_blocks, stats.memory_tokens = int(row[15]), int(row[16])
    return arms, excluded


# Per item and side (ItemSide) over the period's tallies: judged retrievals
# (units), Σy, judged trajectories and successes.
_ITEMS_SQL = """
SELECT item::text, side, SUM(units), SUM(y_sum), SUM(judged), SUM(successes)
FROM {tally}
WHERE {window} AND item IS NOT NULL AND ({in_period})
GROUP BY item, side
"""

# The same over all time, when the totals hold the period (_from_totals):
# the all-time totals (memories.serving.item_totals: one row per item and
# side, items × sides rows) and the appended rows not compacted yet, read in
# one statement (one snapshot: a compaction moves rows into the totals in one
# transaction); item_side_sums adds up a key's rows.
_ITEM_TOTALS_SQL = """
SELECT item::text, side, units, y_sum, judged, successes FROM {totals} WHERE bank_id = %(bank)s AND ({in_period})
UNION ALL
SELECT item::text, side, units, y_sum, judged, successes FROM {tally}
WHERE {window} AND item IS NOT NULL AND NOT compacted AND ({in_period})
"""


def _from_totals(bank: Bank, first: date | None, last: date | None, period: Period | None) -> bool:
    """Whether the window and period are all of the bank's tallies of a
    fraction (or of every fraction), which the all-time totals hold exactly:
    all time, and a period from the bank's first day or one that starts at a
    day (after a change of holdout fraction) with no earlier day of its
    fraction. Every day with per-item rows of a fraction has its arm row (a
    retrieval's row, never merged away), so the arm rows' index tells."""
    if first is not None or last is not None:
        return False
    if period is None or period.first_day is None:
        return True
    earlier = _tallies(bank, None, period.first_day).filter(_same_fraction(period.fraction), item__isnull=True)
    return not earlier.exists()


@dataclass
class ItemSideSums:
    """The period's per-item sums: ``items`` (public ids as text, in the order
    the rows came) and, per column, an array of shape (items,
    sides), sides in ItemSide's order; a side whose units sum to 0 or less
    is all zeros (it took no part)."""

    items: list[str]
    units: np.ndarray
    y: np.ndarray
    judged: np.ndarray
    successes: np.ndarray

    @staticmethod
    def side(side: str) -> int:
        return SIDES.index(side)


SIDES = [side.value for side in ItemSide]


def item_side_sums(bank: Bank, first: date | None, last: date | None, period: Period | None) -> ItemSideSums:
    """Over all time (see _from_totals): from the all-time totals, items ×
    sides rows; any other window or period (one that starts at a day whose
    fraction an earlier day had too): from its days' tallies, days × items
    rows (months × items past ROLLUP_AFTER_DAYS)."""
    if _from_totals(bank, first, last, period):  # the totals have no days: the period is its fraction's
        rows = _period_rows(_ITEM_TOTALS_SQL, bank, first, last, period and replace(period, first_day=None))
    else:
        rows = _period_rows(_ITEMS_SQL, bank, first, last, period)
    index: dict[str, int] = {}
    items, sides, units, y_sums, judged, successes = zip(*rows) if rows else ((),) * 6
    side_at = {side: i for i, side in enumerate(SIDES)}
    where = (
        np.fromiter((index.setdefault(item, len(index)) for item in items), dtype=np.intp, count=len(items)),
        np.fromiter((side_at[side] for side in sides), dtype=np.intp, count=len(sides)),
    )
    found = ItemSideSums(
        list(index), *(np.zeros((len(index), len(SIDES)), dtype=t) for t in (np.int64, float, np.int64, np.int64))
    )
    for target, values in (
        (found.units, units),
        (found.y, y_sums),
        (found.judged, judged),
        (found.successes, successes),
    ):
        np.add.at(target, where, np.asarray(values, dtype=target.dtype))
    idle = found.units <= 0  # a side that took no part: all zeros
    for target in (found.units, found.y, found.judged, found.successes):
        target[idle] = 0
    return found
