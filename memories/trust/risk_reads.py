"""What reviewers read of the risk scan: an item's findings, how many each
queue row has, and the queue filter's condition."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Count, Exists, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce

from memories.items.models import MemoryItem
from memories.trust.risk_models import RiskFinding
from memories.trust.rules.findings import KIND_LABELS


def has_unconfirmed_risks() -> Exists:
    """True for an item with a finding nobody confirmed (the queue's "has risks" filter)."""
    return Exists(RiskFinding.objects.filter(item=OuterRef("pk"), confirmed=False))


def unconfirmed_risk_count() -> Coalesce:
    """An item's unconfirmed findings, as an annotation (a list page reads them in its own query)."""
    n = RiskFinding.objects.filter(item=OuterRef("pk"), confirmed=False).order_by().values("item")
    return Coalesce(Subquery(n.annotate(n=Count("*")).values("n")[:1], output_field=IntegerField()), 0)


def item_risks(*, item: MemoryItem) -> list[RiskFinding]:
    """The item's findings, oldest first, with who confirmed them."""
    return list(RiskFinding.objects.filter(item=item).select_related("confirmed_by", "confirmed_token").order_by("id"))


def risk_counts(*, item_ids: Iterable[int]) -> dict[int, int]:
    """How many unconfirmed findings each of ``item_ids`` has (absent: none), in one query."""
    rows = (
        RiskFinding.objects.filter(item_id__in=list(item_ids), confirmed=False)
        .values("item_id")
        .annotate(n=Count("*"))
        .order_by()
    )
    return {row["item_id"]: row["n"] for row in rows}


def risk_label(kind: str) -> str:
    """The finding kind as reviewers read it."""
    return KIND_LABELS.get(kind, kind.replace("_", " ").capitalize())


def risk_out(finding: RiskFinding) -> dict:
    """A finding in the review API's shape."""
    return {"kind": finding.kind, "excerpt": finding.excerpt, "step": finding.step, "confirmed": finding.confirmed}
