"""Trust tiers in reads: which items reach a verdict tier, what a bank's
trust policy lets it serve, and an item's tier. An item's tier is the
weakest tier of the verdicts of its source trajectories (its experience's);
an item written by hand or imported is a human's. The trajectories are
reached through Experience's relation, so this app never imports them."""

from __future__ import annotations

from django.db.models import Exists, Min, OuterRef, Q

from accounts.models import Bank
from memories.items.experiences import Experience
from memories.items.models import ItemOrigin, MemoryItem
from memories.trust.models import TIER_NAMES, TrustPolicy, VerdictTier

HUMAN_WRITTEN = (ItemOrigin.MANUAL, ItemOrigin.IMPORT)


def _trajectories():
    return Experience._meta.get_field("trajectories").related_model.objects


def tier_q(min_tier: int) -> Q:
    """Items whose source verdicts all reach ``min_tier`` (one written by hand or imported is a human's)."""
    weaker = _trajectories().filter(experience_id=OuterRef("experience_id"), verdict_tier__lt=min_tier)
    human = Q(origin__in=HUMAN_WRITTEN)
    learnt = ~human & Q(experience__isnull=False) & ~Q(Exists(weaker))
    return human | learnt if min_tier <= VerdictTier.HUMAN else learnt


def bank_policy_q() -> Q:
    """Items their bank's trust policy lets it serve: all of them when the bank
    has no policy or no tier set; else those reaching its ``min_tier``. In SQL,
    with no query of its own (probes of the policy's unique index per item)."""
    policy = TrustPolicy.objects.filter(bank_id=OuterRef("bank_id"), min_tier__gt=0)
    weaker = _trajectories().filter(
        experience_id=OuterRef(OuterRef("experience_id")), verdict_tier__lt=OuterRef("min_tier")
    )
    human = Q(origin__in=HUMAN_WRITTEN)
    human_served = human & ~Q(Exists(policy.filter(min_tier__gt=VerdictTier.HUMAN)))
    learnt_served = (
        ~human & ~Q(Exists(policy.filter(Exists(weaker)))) & (Q(experience__isnull=False) | ~Q(Exists(policy)))
    )
    return human_served | learnt_served


def item_tier(*, item: MemoryItem) -> int:
    """The item's verdict tier (VerdictTier): the weakest of its source trajectories', HUMAN for one
    written by hand or imported, NONE when its sources are gone."""
    if item.origin in HUMAN_WRITTEN:
        return VerdictTier.HUMAN
    if item.experience_id is None:
        return VerdictTier.NONE
    weakest = _trajectories().filter(experience_id=item.experience_id).aggregate(t=Min("verdict_tier"))["t"]
    return VerdictTier.NONE if weakest is None else weakest


def tier_name(tier: int) -> str:
    """ "agent", "judge", "human", or "" for none."""
    return TIER_NAMES.get(tier, "")


def bank_trust_policy(*, bank: Bank) -> TrustPolicy:
    """The bank's policy (unsaved defaults when it has none yet)."""
    return TrustPolicy.objects.filter(bank=bank).first() or TrustPolicy(bank=bank)
