"""Corroboration before serving, an opt-in bank policy: an item is served
only when a human approved it after seeing its findings, or when at least N
independent source trajectories support it and it has no finding. What an
item's page, its queue row and the review API say of it; serving filters in
SQL (``memories.serving.corroboration_q``) on the counts
``memories.items.corroboration`` keeps on the item."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import BooleanField, ExpressionWrapper

from memories.items.models import ItemStatus, MemoryItem
from memories.serving import corroboration_q, human_approved_q
from memories.trust.models import CorroborationDistinct, TrustPolicy

# How the auto-approval's wait reads on the item (its needs_review_reason) and where it is recognized.
WAITING = "Corroborated by "
_NOUNS = {
    CorroborationDistinct.RUNS: ("independent run", "independent runs"),
    CorroborationDistinct.AGENTS: ("independent agent", "independent agents"),
    CorroborationDistinct.TOKENS: ("independent API token", "independent API tokens"),
}
_COUNTS = {
    CorroborationDistinct.RUNS: "corroborating_runs",
    CorroborationDistinct.AGENTS: "corroborating_agents",
    CorroborationDistinct.TOKENS: "corroborating_tokens",
}


@dataclass(frozen=True)
class Corroboration:
    """An item's corroboration under its bank's policy: ``sources`` independent
    sources as the policy counts them (``distinct``), of ``required``;
    ``met`` when they reach it. The ``text`` reads "Corroborated by 1 of 3
    independent runs"."""

    sources: int
    required: int
    distinct: str

    @property
    def met(self) -> bool:
        return self.sources >= self.required

    @property
    def text(self) -> str:
        one, many = _NOUNS[CorroborationDistinct(self.distinct)]
        return f"{WAITING}{self.sources} of {self.required} {one if self.required == 1 else many}"

    def as_dict(self) -> dict:
        return {"sources": self.sources, "required": self.required, "distinct": self.distinct, "met": self.met}


def corroboration_of(*, item: MemoryItem, policy: TrustPolicy | None) -> Corroboration | None:
    """``item``'s corroboration, or None when its bank does not require any."""
    if policy is None or not policy.corroboration_required:
        return None
    sources = getattr(item, _COUNTS[CorroborationDistinct(policy.corroboration_distinct)], 0) or 0
    return Corroboration(
        sources=sources, required=policy.corroboration_min_sources, distinct=policy.corroboration_distinct
    )


def waiting_reason(corroboration: Corroboration) -> str:
    """The reason an item the policy would approve stays in the queue until corroborated."""
    return f"{corroboration.text}: not served yet."


def is_waiting(item: MemoryItem) -> bool:
    """Whether ``item`` is a proposal the auto-approval holds until it is corroborated."""
    return item.status == ItemStatus.PROPOSED and (item.needs_review_reason or "").startswith(WAITING)


HUMAN_APPROVAL_NOTE = "approved by a human: served without waiting for corroboration"


def awaits_human_approval(item: MemoryItem) -> bool:
    """Whether the approved ``item`` is withheld by its bank's corroboration policy (no human approved it, and
    too few independent sources or a finding): a human's approval then records one."""
    if item.status != ItemStatus.APPROVED:
        return False
    return MemoryItem.objects.filter(pk=item.pk).exclude(corroboration_q()).exists()


def item_corroboration_out(item: MemoryItem) -> dict | None:
    """The review API's ``corroboration`` of ``item`` (None when its bank does not require it), in one query
    beside the policy's."""
    corroboration = corroboration_of(item=item, policy=TrustPolicy.objects.filter(bank_id=item.bank_id).first())
    if corroboration is None:
        return None
    flags = (
        MemoryItem.objects.filter(pk=item.pk)
        .annotate(human=ExpressionWrapper(human_approved_q(), output_field=BooleanField()))
        .annotate(allowed=ExpressionWrapper(corroboration_q(), output_field=BooleanField()))
        .values("human", "allowed")
        .first()
    ) or {"human": False, "allowed": False}
    return {**corroboration.as_dict(), "human_approved": flags["human"], "policy_allows": flags["allowed"]}


def corroboration_waiting(*, bank, limit: int = 50) -> list[MemoryItem]:
    """Proposed items the auto-approval holds until they are corroborated (the count in their reason), newest
    first."""
    return list(
        MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED, needs_review_reason__startswith=WAITING)
        .only("id", "public_id", "bank_id", "title", "needs_review_reason", "created_at")
        .order_by("-created_at", "-id")[:limit]
    )
