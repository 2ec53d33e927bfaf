"""Per memory item: does serving it help? Over the bank report's period,
with per-item randomisation (bank.item_holdout_fraction) an item served vs
the same item left out on its own among treatment retrievals; otherwise vs
the holdout arm (``ItemComparison``). Reads the maintained sums
(``tallies.item_side_sums``) and the items' titles."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from accounts.models import Bank
from memories.items.models import MemoryItem
from memories.serving.models import ItemSide
from trajectories.impact.arms import percent
from trajectories.impact.report import ImpactReport, bank_impact
from trajectories.impact.statistics import item_effect_arrays
from trajectories.impact.tallies import item_side_sums, window_days
from trajectories.impact.verdicts import Verdict


@dataclass
class ItemOutcome:
    public_id: uuid.UUID
    item: MemoryItem | None  # None: the item no longer exists
    served_judged: int  # judged trajectories whose retrieval served the item
    served_successes: int
    withheld_judged: int  # ... whose retrieval would have served it but was held out
    withheld_successes: int
    served_units: int = 0  # the same as retrievals (one outcome each)
    served_y: float = 0.0
    withheld_units: int = 0
    withheld_y: float = 0.0
    difference: float | None = None  # served − withheld success rate per retrieval
    low: float | None = None  # Newcombe 95% for this item alone
    high: float | None = None
    p_value: float | None = None
    shrunk: float | None = None
    may_hurt: bool = False  # significantly below withheld after Benjamini–Hochberg
    may_help: bool = False

    @property
    def title(self) -> str:
        return self.item.title if self.item is not None else "(deleted item)"

    @property
    def served_rate(self) -> float | None:
        return self.served_y / self.served_units if self.served_units else None

    @property
    def withheld_rate(self) -> float | None:
        return self.withheld_y / self.withheld_units if self.withheld_units else None

    @property
    def served_pct(self) -> float | None:
        return percent(self.served_rate)

    @property
    def withheld_pct(self) -> float | None:
        return percent(self.withheld_rate)

    @property
    def difference_pts(self) -> float | None:
        return percent(self.difference)

    @property
    def low_pts(self) -> float | None:
        return percent(self.low)

    @property
    def high_pts(self) -> float | None:
        return percent(self.high)

    @property
    def served_count(self) -> int:
        return self.item.served_count if self.item is not None else 0

    @property
    def status(self) -> str:
        return self.item.status if self.item is not None else ""


def _most_judged(served_judged: np.ndarray, withheld_judged: np.ndarray, items: list, limit: int) -> list[int]:
    """The positions of the ``limit`` items with the most judged served
    trajectories, then withheld, then by id: sorted by the counts in numpy,
    and the few tied with the last one kept by their ids."""
    if limit <= 0 or not len(items):
        return []
    order = np.lexsort((-withheld_judged, -served_judged))
    if len(order) > limit:
        last = order[limit - 1]
        tied = (served_judged[order] == served_judged[last]) & (withheld_judged[order] == withheld_judged[last])
        order = order[: max(limit, int(np.flatnonzero(tied)[-1]) + 1)]
    key = [(-int(served_judged[i]), -int(withheld_judged[i]), str(items[i])) for i in order]
    return [int(i) for _, i in sorted(zip(key, order))[:limit]]


class ItemComparison:
    RANDOMISED = "randomised"  # per-item randomisation: served vs left out on its own, treatment arm
    HOLDOUT_ARM = "holdout_arm"  # served (treatment) vs the holdout arm: the whole set served with the item


def item_outcomes(
    *,
    bank: Bank,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    report: ImpactReport | None = None,
) -> list[ItemOutcome]:
    """Per memory item, over the report's period: the served − withheld
    difference of judged retrievals it was a candidate for, with Newcombe's
    interval, a p-value, a shrunken estimate, and ``may_hurt`` / ``may_help``
    only when Benjamini–Hochberg at a 10% false-discovery rate across all
    tested items says so (an item needs MIN_ITEM_JUDGED judged retrievals on
    each side to be tested).

    Which comparison (``ItemComparison``, one for all items of a report):
    when the period has retrievals with per-item randomisation
    (bank.item_holdout_fraction > 0), the item served vs the item left out on
    its own, among treatment retrievals with randomisation on — the item's
    own effect, unbiased; otherwise the item served vs the holdout arm's
    retrievals it would have been served in — the effect of the whole set
    served with it. Ordered by judged served trajectories, most first, at
    most ``limit`` rows. One aggregate over the tallies plus one query for
    the items' titles and status (items of other banks are never fetched);
    ``report`` (the bank report of the same window) is computed when not given."""
    if report is None:
        report = bank_impact(bank=bank, since=since, until=until)
    first, last = window_days(since, until)
    period = report.period if report.verdict != Verdict.NO_HOLDOUT else None
    sums = item_side_sums(bank, first, last, period)
    side = sums.side
    randomised = bool(sums.units[:, [side(ItemSide.SERVED_RANDOMISED), side(ItemSide.WITHHELD_RANDOMISED)]].any())
    report.item_comparison = ItemComparison.RANDOMISED if randomised else ItemComparison.HOLDOUT_ARM
    if randomised:
        served_sides, withheld_sides = [side(ItemSide.SERVED_RANDOMISED)], [side(ItemSide.WITHHELD_RANDOMISED)]
    else:
        served_sides, withheld_sides = (
            [side(ItemSide.SERVED), side(ItemSide.SERVED_RANDOMISED)],
            [side(ItemSide.HOLDOUT)],
        )
    # (units, Σy, judged, successes) of each item's two sides, in one pass per column.
    served = [column[:, served_sides].sum(axis=1) for column in (sums.units, sums.y, sums.judged, sums.successes)]
    withheld = [column[:, withheld_sides].sum(axis=1) for column in (sums.units, sums.y, sums.judged, sums.successes)]
    compared = np.flatnonzero((served[0] != 0) | (withheld[0] != 0))
    served, withheld = [c[compared] for c in served], [c[compared] for c in withheld]
    # Every item is tested (Benjamini–Hochberg needs them all); only the shown ones are built.
    effects = item_effect_arrays(served[0], served[1], withheld[0], withheld[1])
    shown = _most_judged(served[2], withheld[2], [sums.items[i] for i in compared], max(0, int(limit)))
    outcomes = []
    for i in shown:
        s_units, s_y, s_judged, s_successes = (c[i].item() for c in served)
        w_units, w_y, w_judged, w_successes = (c[i].item() for c in withheld)
        difference, low, high, p_value, shrunk = (
            None if math.isnan(v) else v
            for v in (
                c[i].item() for c in (effects.difference, effects.low, effects.high, effects.p_value, effects.shrunk)
            )
        )
        significant = bool(effects.significant[i])
        outcomes.append(
            ItemOutcome(
                public_id=uuid.UUID(sums.items[compared[i]]),
                item=None,
                served_judged=s_judged,
                served_successes=s_successes,
                withheld_judged=w_judged,
                withheld_successes=w_successes,
                served_units=s_units,
                served_y=s_y,
                withheld_units=w_units,
                withheld_y=w_y,
                difference=difference,
                low=low,
                high=high,
                p_value=p_value,
                shrunk=shrunk,
                may_hurt=significant and difference < 0,
                may_help=significant and difference > 0,
            )
        )
    ids = [o.public_id for o in outcomes]
    if ids:
        items = {
            item.public_id: item
            for item in MemoryItem.objects.filter(bank=bank, public_id__in=ids).only(
                "public_id", "title", "status", "served_count", "bank_id"
            )
        }
        for outcome in outcomes:
            outcome.item = items.get(outcome.public_id)
    return outcomes
