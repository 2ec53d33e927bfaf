"""What a retrieval may serve beyond the bank and status: its filters."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, Q

from memories.trust.risk_models import RiskFinding
from memories.trust.selectors import bank_policy_q, tier_name, tier_q


@dataclass(frozen=True)
class RetrievalFilters:
    """What a retrieval may serve, beyond the bank and status: items carrying
    any of ``tags_any`` and all of ``tags_all``, learnt from a trajectory of
    one of ``agents``, whose source trajectories' metadata includes
    ``metadata`` (JSON containment: every key with that value, nested objects
    matched partially), whose source verdicts reach ``min_tier`` (VerdictTier;
    0: any). Empty parts do not filter. Items written by hand or
    imported have no source agent or metadata, so those filters leave them out."""

    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)
    min_tier: int = 0

    def __bool__(self) -> bool:
        return bool(self.tags_any or self.tags_all or self.agents or self.metadata or self.min_tier)

    def q(self, prefix: str = "") -> Q:
        """The filters as a Q on MemoryItem (``prefix`` for a related item, e.g. "items__");
        every lookup has a GIN index, and all of them run inside the vector search. Whatever the
        filters, an item with a risk finding nobody confirmed is never served (``unconfirmed_risk_q``),
        nor one its bank's trust policy refuses (``bank_policy_q``)."""
        q = ~unconfirmed_risk_q(prefix)
        if not prefix:
            q &= bank_policy_q()
        if self.min_tier:
            q &= tier_q(self.min_tier)
        if self.tags_any:
            q &= Q(**{f"{prefix}tags__overlap": list(self.tags_any)})
        if self.tags_all:
            q &= Q(**{f"{prefix}tags__contains": list(self.tags_all)})
        if self.agents:
            q &= Q(**{f"{prefix}source_agents__overlap": list(self.agents)})
        if self.metadata:
            # source_metadata is a list of objects: [{...}] is contained when one of them contains {...}.
            q &= Q(**{f"{prefix}source_metadata__contains": [self.metadata]})
        return q

    def as_dict(self) -> dict:
        """The filters in the API's shape (recorded on the RetrievalEvent); {} when none."""
        out: dict = {}
        tags = {key: list(values) for key, values in (("any", self.tags_any), ("all", self.tags_all)) if values}
        if tags:
            out["tags"] = tags
        if self.agents:
            out["agent"] = {"in": list(self.agents)}
        if self.metadata:
            out["metadata"] = self.metadata
        if self.min_tier:
            out["tier"] = {"min": tier_name(self.min_tier)}
        return out


def unconfirmed_risk_q(prefix: str = "") -> Q:
    """Items with a risk finding nobody confirmed: negated, a NOT EXISTS probing the partial index
    ``riskfinding_unconfirmed`` per candidate (a related item, ``prefix``, as a NOT IN)."""
    if prefix:
        return Q(**{f"{prefix}pk__in": RiskFinding.objects.filter(confirmed=False).values("item_id")})
    return Q(Exists(RiskFinding.objects.filter(item=OuterRef("pk"), confirmed=False)))


NO_FILTERS = RetrievalFilters()
