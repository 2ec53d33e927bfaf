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

from django.utils import timezone

from memories.serving.models import RetrievalTally
from memories.serving.tallies import COMPACT_BATCH, KEY, tallies_fold

ROLLUP_AFTER_DAYS = 90
"""Days kept one row per day (the Impact page's 7/30/90-day windows read only those)."""

_DAY, _MONTHLY = KEY.index("day"), KEY.index("monthly")


def month_end(day: date) -> date:
    """The last day of ``day``'s month."""
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)


def month_start(day: date) -> date:
    return day.replace(day=1)


def rollup_before(today: date) -> date:
    """Daily rows before this day are rolled up: the first day of the month
    of ``today`` − ROLLUP_AFTER_DAYS, so only whole months are."""
    return month_start(today - timedelta(days=ROLLUP_AFTER_DAYS))


def _month_key(key: tuple) -> tuple:
    month = list(key)
    month[_DAY], month[_MONTHLY] = month_end(key[_DAY]), True
    return tuple(month)


def retrieval_tallies_roll_up(*, today: date | None = None, batch: int = COMPACT_BATCH) -> int:
    """Fold the daily rows of whole months older than ROLLUP_AFTER_DAYS into
    their month's row; returns how many daily rows were folded. Exact: each
    row's sums move into exactly one monthly row (claimed with ``FOR UPDATE
    SKIP LOCKED``, like compaction)."""
    before = rollup_before(today or timezone.now().date())
    daily = RetrievalTally.objects.filter(monthly=False, day__lt=before)
    return tallies_fold(daily, target=_month_key, batch=batch)
