"""Impact's per-item effects put to work: each measured item's effect and
observations written on it (what utility ranking reads), and the items
Impact flags as hurting (FDR-controlled) proposed for retirement with their
evidence (``memory_items_outcomes_record``). Run by a beat task for every
bank that measures items."""

from __future__ import annotations

from django.db.models import Q

from accounts.models import Bank
from memories.items.models import MemoryItem
from memories.learning.retirement import ItemEffect, memory_items_outcomes_record
from trajectories.impact.items import ItemOutcome, item_outcomes
from trajectories.impact.report import bank_impact

# Items read per bank: the Impact page shows 50; ranking and retirement want every measured item.
ITEM_EFFECTS_LIMIT = 5000


def _evidence(outcome: ItemOutcome, comparison: str) -> dict:
    return {
        "comparison": comparison,
        "served_rate": outcome.served_rate,
        "withheld_rate": outcome.withheld_rate,
        "served_judged": outcome.served_judged,
        "withheld_judged": outcome.withheld_judged,
        "difference": outcome.difference,
        "low": outcome.low,
        "high": outcome.high,
        "p_value": outcome.p_value,
    }


def bank_item_effects_record(*, bank: Bank) -> list[MemoryItem]:
    """Write Impact's all-time per-item effects on ``bank``'s items (effect =
    served − withheld success rate, n = judged retrievals on both sides) and
    propose for retirement those it flags as hurting. Returns the items newly
    proposed."""
    report = bank_impact(bank=bank)
    outcomes = item_outcomes(bank=bank, limit=ITEM_EFFECTS_LIMIT, report=report)
    comparison = report.item_comparison
    effects = [
        ItemEffect(
            public_id=str(o.public_id),
            effect=o.difference,
            n=o.served_units + o.withheld_units,
            hurts=o.may_hurt,
            evidence=_evidence(o, comparison),
        )
        for o in outcomes
        if o.item is not None
    ]
    return memory_items_outcomes_record(bank=bank, effects=effects)


def item_effects_record_all() -> int:
    """bank_item_effects_record for every active bank that measures items
    (a holdout arm or per-item randomisation); returns how many items were
    proposed for retirement."""
    banks = Bank.objects.filter(archived_at__isnull=True).filter(
        Q(holdout_fraction__gt=0) | Q(item_holdout_fraction__gt=0)
    )
    return sum(len(bank_item_effects_record(bank=bank)) for bank in banks.select_related("team"))
