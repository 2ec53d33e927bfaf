"""What the trust page reads of the bank's safe auto-approval: the rejected
twin check, the policy's record with its audit disagreement rate, the audit
sample waiting for a human, and the items its topic gate kept for one."""

from __future__ import annotations

from django.db.models import Count, Q

from accounts.models import Bank
from memories.items.models import ItemStatus, MemoryItem
from memories.items.near_duplicates import near_duplicates_search
from memories.trust.models import AuditVerdict, AutoApproval
from memories.trust.topics import HELD_BACK


def rejected_twin_exists(*, item: MemoryItem) -> bool:
    """Whether ``item``'s bank refused (rejected, or archived as wrong) an item this close to it: a lesson
    refused before. The same search as the near-duplicates and the focus view's rejected look-alikes."""
    if item.embedding is None:
        return False
    return bool(near_duplicates_search(bank=item.bank, vector=item.embedding, exclude_pk=item.pk, refused=True))


def auto_approval_stats(*, bank: Bank) -> dict:
    """The policy's record: approvals made, undone, in the audit sample, audited, and the disagreement rate
    (None before any audit)."""
    rows = AutoApproval.objects.filter(bank=bank)
    counts = rows.aggregate(
        made=Count("id"),
        undone=Count("id", filter=Q(undone_at__isnull=False)),
        sampled=Count("id", filter=Q(sampled=True)),
        agree=Count("id", filter=Q(audit_verdict=AuditVerdict.AGREE)),
        disagree=Count("id", filter=Q(audit_verdict=AuditVerdict.DISAGREE)),
    )
    audited = counts["agree"] + counts["disagree"]
    counts["audited"] = audited
    counts["disagreement_rate"] = counts["disagree"] / audited if audited else None
    return counts


def audit_sample_pending(*, bank: Bank, limit: int = 50) -> list[AutoApproval]:
    """Auto-approvals of the audit sample no human has answered yet, oldest first."""
    return list(
        AutoApproval.objects.filter(bank=bank, sampled=True, audit_verdict="", undone_at__isnull=True)
        .select_related("item")
        .order_by("created_at", "id")[:limit]
    )


def auto_approval_held_back(*, bank: Bank, limit: int = 50) -> list[MemoryItem]:
    """Proposed items the topic gate kept from auto-approval (the reason in ``needs_review_reason``), newest first."""
    return list(
        MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED, needs_review_reason__startswith=HELD_BACK)
        .only("id", "public_id", "bank_id", "title", "needs_review_reason", "created_at")
        .order_by("-created_at", "-id")[:limit]
    )
