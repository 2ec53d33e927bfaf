"""What the trust page reads of the bank's safe auto-approval: the rejected
twin check, the policy's record with its audit disagreement rate, the audit
sample waiting for a human, and the items its topic gate kept for one."""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import Count, Q

from accounts.models import Bank
from memories.items.models import ItemStatus, MemoryItem
from memories.items.near_duplicates import near_duplicates_search
from memories.trust.models import AuditVerdict, AutoApproval
from memories.trust.topics import HELD_BACK
from reasoningbank_site.rates import CaseRate

AUTO_APPROVALS_PER_PAGE = 25


def rejected_twin_exists(*, item: MemoryItem) -> bool:
    """Whether ``item``'s bank refused (rejected, or archived as wrong) an item this close to it: a lesson
    refused before. The same search as the near-duplicates and the focus view's rejected look-alikes."""
    if item.embedding is None:
        return False
    return bool(near_duplicates_search(bank=item.bank, vector=item.embedding, exclude_pk=item.pk, refused=True))


def auto_approval_stats(*, bank: Bank) -> dict:
    """The policy's record: approvals made, undone, in the audit sample, audited, and the disagreement rate
    (``disagreement``: a CaseRate of the audited, so no rate from a handful of audits)."""
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
    counts["disagreement"] = CaseRate(counts["disagree"], audited)
    return counts


def auto_approvals_page(*, bank: Bank, page=1) -> Page:
    """One page of the policy's approvals, most recent first, with their items and who audited them
    (a page number out of range gives the last page)."""
    rows = (
        AutoApproval.objects.filter(bank=bank)
        .select_related("item", "audited_by")
        .only(
            "id",
            "created_at",
            "sampled",
            "audit_verdict",
            "audited_at",
            "undone_at",
            "audited_by__username",
            "item__public_id",
            "item__title",
            "item__status",
            "item__bank_id",
        )
        .order_by("-created_at", "-id")
    )
    return Paginator(rows, AUTO_APPROVALS_PER_PAGE).get_page(page)


def auto_approval_disagreements(*, bank: Bank, limit: int = 20) -> list[AutoApproval]:
    """The audit's disagreements, most recent first: the items a human sent back, who and when."""
    return list(
        AutoApproval.objects.filter(bank=bank, audit_verdict=AuditVerdict.DISAGREE)
        .select_related("item", "audited_by")
        .order_by("-audited_at", "-id")[:limit]
    )


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
