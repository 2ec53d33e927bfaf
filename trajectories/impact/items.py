"""Per memory item: does serving it help? Over the bank report's period,
with per-item randomisation (bank.item_holdout_fraction) an item served vs
the same item left out on its own among treatment retrievals; otherwise vs
the holdout arm (``ItemComparison``). Reads the maintained sums
(``tallies.item_side_sums``) and the items' titles."""

from __future__ import annotations

import heapq
import uuid
from dataclasses import dataclass
from datetime import datetime

from accounts.models import Bank
from memories.items.models import MemoryItem
from memories.serving.models import ItemSide
from trajectories.impact.arms import percent
from trajectories.impact.report import ImpactReport, bank_impact
from trajectories.impact.statistics import item_effects
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


class ItemComparison:
    RANDOMISED = "randomised"  # per-item randomisation: served vs left out on its own, treatment arm
    HOLDOUT_ARM = "holdout_arm"  # served (treatment) vs the holdout arm: the whole set served with the item


def _add(*parts: tuple[int, float, int, int] | None) -> tuple[int, float, int, int]:
    """Sum of (units, Σy, judged, successes) tuples; missing sides are zero."""
    units, y, judged, successes = 0, 0.0, 0, 0
    for part in parts:
        if part:
            units, y, judged, successes = units + part[0], y + part[1], judged + part[2], successes + part[3]
    return units, y, judged, successes


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
    sides = item_side_sums(bank, first, last, period)
    randomised = any(
        ItemSide.SERVED_RANDOMISED in found or ItemSide.WITHHELD_RANDOMISED in found for found in sides.values()
    )
    report.item_comparison = ItemComparison.RANDOMISED if randomised else ItemComparison.HOLDOUT_ARM
    pairs = []
    for item, found in sides.items():
        if randomised:
            served, withheld = (
                _add(found.get(ItemSide.SERVED_RANDOMISED)),
                _add(found.get(ItemSide.WITHHELD_RANDOMISED)),
            )
        else:
            served = _add(found.get(ItemSide.SERVED), found.get(ItemSide.SERVED_RANDOMISED))
            withheld = _add(found.get(ItemSide.HOLDOUT))
        if served[0] or withheld[0]:
            pairs.append((item, served, withheld))
    effects = item_effects([(served[0], served[1], withheld[0], withheld[1]) for _, served, withheld in pairs])
    # Every item is tested (Benjamini–Hochberg needs them all); only the shown ones are built.
    shown = heapq.nsmallest(
        max(0, int(limit)), range(len(pairs)), key=lambda i: (-pairs[i][1][2], -pairs[i][2][2], str(pairs[i][0]))
    )
    outcomes = []
    for (item, served, withheld), effect in ((pairs[i], effects[i]) for i in shown):
        outcomes.append(
            ItemOutcome(
                public_id=item,
                item=None,
                served_judged=served[2],
                served_successes=served[3],
                withheld_judged=withheld[2],
                withheld_successes=withheld[3],
                served_units=served[0],
                served_y=served[1],
                withheld_units=withheld[0],
                withheld_y=withheld[1],
                difference=effect.difference,
                low=effect.low,
                high=effect.high,
                p_value=effect.p_value,
                shrunk=effect.shrunk,
                may_hurt=effect.significant and effect.difference < 0,
                may_help=effect.significant and effect.difference > 0,
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
