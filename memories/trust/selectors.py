"""Trust tiers in reads: which items reach a verdict tier, what a bank's
trust policy lets it serve, and an item's tier. An item's tier is the
weakest tier of the verdicts of its source trajectories (its experience's);
an item written by hand or imported is a human's. The trajectories are
reached through Experience's relation, so this app never imports them."""

from __future__ import annotations

from django.db.models import Min

from accounts.models import Bank
from memories.items.models import MemoryItem
from memories.serving import HUMAN_WRITTEN, experience_trajectories
from memories.trust.models import TrustPolicy, VerdictTier


def item_tier(*, item: MemoryItem) -> int:
    """The item's verdict tier (VerdictTier): the weakest of its source trajectories', HUMAN for one
    written by hand or imported, NONE when its sources are gone."""
    if item.origin in HUMAN_WRITTEN:
        return VerdictTier.HUMAN
    if item.experience_id is None:
        return VerdictTier.NONE
    weakest = experience_trajectories().filter(experience_id=item.experience_id).aggregate(t=Min("verdict_tier"))["t"]
    return VerdictTier.NONE if weakest is None else weakest


def bank_trust_policy(*, bank: Bank) -> TrustPolicy:
    """The bank's policy (unsaved defaults when it has none yet)."""
    return TrustPolicy.objects.filter(bank=bank).first() or TrustPolicy(bank=bank)
