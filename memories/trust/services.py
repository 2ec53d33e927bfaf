"""Trust policy writes: a bank's policy (serving tier, safe auto-approval,
abuse limits), the auto-approval of screened items with its human audit
sample, and the bulk undo of the policy's approvals."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank
from memories.items.corroboration import COUNT_FIELDS
from memories.items.models import ItemStatus, MemoryItem
from memories.items.transitions import item_status_move
from memories.items.versions import item_lock
from memories.trust.actions.services import item_has_new_action
from memories.trust.auto_approval import rejected_twin_exists
from memories.trust.corroboration import WAITING, corroboration_of, is_waiting, waiting_reason
from memories.trust.models import TIER_NAMES, AuditVerdict, AutoApproval, TrustPolicy, VerdictTier
from memories.trust.provenance.services import provenance_unknown
from memories.trust.risk_models import RiskFinding
from memories.trust.risks import memory_items_risk_scan
from memories.trust.topics import HELD_BACK, held_back_reason, sensitive_topics
from reasoningbank_site.errors import Conflict, Invalid

POLICY_FIELDS = (
    "min_tier",
    "auto_approve",
    "auto_approve_agents",
    "audit_share",
    "daily_llm_token_budget",
    "llm_risk_check",
    "anomaly_false_flag_rate",
    "corroboration_required",
    "corroboration_min_sources",
    "corroboration_distinct",
)
AUTO_APPROVED_REASON = "Approved by the bank's trust policy (no risk finding, no twin, verdict of the {tier} met)."
# A bank's first auto-approvals all go to the human audit sample; then its audit_share of them.
AUDIT_ALL_FIRST = 50


@transaction.atomic
def bank_trust_policy_update(*, bank: Bank, actor, **values) -> TrustPolicy:
    """Change some of the bank's trust policy (keys of POLICY_FIELDS; the
    policy is made on first change) and audit the fields that changed.
    Raises Invalid for unknown keys or values the model refuses."""
    unknown = sorted(set(values) - set(POLICY_FIELDS))
    if unknown:
        raise Invalid(f"Unknown trust policy setting: {', '.join(unknown)}.")
    policy, _ = TrustPolicy.objects.select_for_update().get_or_create(bank=bank)
    before = {key: getattr(policy, key) for key in values}
    for key, value in values.items():
        setattr(policy, key, value)
    try:
        policy.full_clean(exclude=["bank"])
    except ValidationError as exc:
        raise Invalid("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from None
    changed = [key for key in values if getattr(policy, key) != before[key]]
    if changed:
        policy.save(update_fields=[*changed, "updated_at"])
        audit_record(
            action=AuditAction.BANK_UPDATE_TRUST_POLICY,
            bank=bank,
            user=actor,
            obj=bank,
            before={key: before[key] for key in changed},
            after={key: getattr(policy, key) for key in changed},
        )
    return policy


def memory_items_screen(
    *, items: Sequence[MemoryItem], steps: Sequence[dict] = (), tier: int = 0, task: str = ""
) -> None:
    """What happens to items just distilled from one run (``steps``, its
    verdict ``tier``, the user's ``task``): the risk scan, then the bank's
    auto-approval when its policy has it on (memory_items_auto_approve)."""
    memory_items_risk_scan(items=items, steps=steps, task=task)
    memory_items_auto_approve(items=items, tier=tier)


def _refusal(policy: TrustPolicy, item: MemoryItem, tier: int) -> str:
    """Why the policy will not approve ``item`` ("" when it will). The topic gate's reason starts with
    HELD_BACK and is shown to reviewers; the others are the ordinary review's business."""
    if RiskFinding.objects.filter(item=item).exists():
        return "risk findings"
    if provenance_unknown(item):  # unknown is not safe: a human reads where its words came from
        return "unknown provenance"
    topics = sensitive_topics(f"{item.title}\n{item.description}\n{item.content}")
    if topics:
        return held_back_reason(topics)
    if item_has_new_action(item):  # a host, command, package or payee the bank never approved: a human looks
        return "an action new to the bank"
    if item.near_duplicates:
        return "a near-duplicate"
    if rejected_twin_exists(item=item):
        return "a rejected twin"
    if tier < max(policy.min_tier, VerdictTier.JUDGE):  # the agent's own word never approves by itself
        return "verdict tier"
    if policy.auto_approve_agents and not set(item.source_agents or ()) <= set(policy.auto_approve_agents):
        return "agent not on the allow-list"
    corroboration = corroboration_of(item=item, policy=policy)
    if corroboration is not None and not corroboration.met:
        return waiting_reason(corroboration)  # shown to reviewers: "Corroborated by 1 of 3 independent runs: …"
    return ""


def memory_items_auto_approve(*, items: Sequence[MemoryItem], tier: int) -> list[AutoApproval]:
    """Approve, as the bank's trust policy, each new proposal of ``items``
    that has no risk finding, recommends nothing of the topic gate's
    (memories.trust.topics: commands, URLs, package indexes, payments,
    credentials, role changes), has no near-duplicate and no rejected twin,
    whose verdict ``tier`` reaches the policy's (and is at least the
    judge's), and whose source agents are on the allow-list when there is
    one. An item the topic gate keeps stays proposed with the reason in its
    ``needs_review_reason``. Nothing happens when the policy is off (the
    default). Each approval is a version "auto-approved" (no author), its
    one audit event (memory_item.auto_approve, its note naming the verdict's
    tier), and an AutoApproval row; the bank's first AUDIT_ALL_FIRST
    approvals, then a random ``audit_share`` of them, are marked for the
    human audit sample. When the bank requires corroboration, an item with
    fewer independent sources than it asks for stays proposed, its reason
    "Corroborated by 1 of 3 independent runs: not served yet."; each later
    run that distills it again (an item of ``items`` with ``supported_by``)
    counts again, and the policy approves it once it is corroborated."""
    fresh = [i for i in items if i.pk is not None and (getattr(i, "supported_by", None) is None or is_waiting(i))]
    if not fresh:
        return []
    policy = TrustPolicy.objects.filter(bank_id=fresh[0].bank_id, auto_approve=True).first()
    if policy is None:
        return []
    seen_again = [i for i in fresh if getattr(i, "supported_by", None) is not None]
    if seen_again:  # their counts grew in the statement that recorded the evidence: read them
        counts = MemoryItem.objects.only("pk", *COUNT_FIELDS).in_bulk([i.pk for i in seen_again])
        for item in seen_again:
            for name in COUNT_FIELDS:
                setattr(item, name, getattr(counts[item.pk], name))
    made = []
    earlier = AutoApproval.objects.filter(bank_id=policy.bank_id).count()
    for item in {i.pk: i for i in fresh}.values():
        if item.status != ItemStatus.PROPOSED:
            continue
        refusal = _refusal(policy, item, tier)
        shown = refusal if refusal.startswith((HELD_BACK, WAITING)) else ""
        if is_waiting(item) and not shown:  # seen again, refused for another reason: its count stays true
            corroboration = corroboration_of(item=item, policy=policy)
            shown = waiting_reason(corroboration) if corroboration and not corroboration.met else ""
        if shown or is_waiting(item):
            MemoryItem.objects.filter(pk=item.pk, status=ItemStatus.PROPOSED).update(needs_review_reason=shown)
            item.needs_review_reason = shown
        if refusal:
            continue

        def approval(item: MemoryItem) -> list[str]:
            item.approved_at, item.approved_by = timezone.now(), None
            return ["approved_at", "approved_by"]

        reason = AUTO_APPROVED_REASON.format(tier=TIER_NAMES.get(tier, "verdict"))  # its one audit event's note
        if not item_status_move(
            item=item, to=ItemStatus.APPROVED, reason=reason, prepare=approval, action="auto-approved"
        ):
            continue
        sampled = earlier + len(made) < AUDIT_ALL_FIRST or random.random() < policy.audit_share
        made.append(AutoApproval(item=item, bank_id=item.bank_id, sampled=sampled))
    return AutoApproval.objects.bulk_create(made) if made else []


@transaction.atomic
def auto_approval_audit(*, approval: AutoApproval, author, agree: bool) -> AutoApproval:
    """A human's answer on an auto-approval of the audit sample, audited as
    ``auto_approval.audit`` (the verdict in its ``after``). Disagreeing
    sends the item back to review (proposed) with a reason naming ``author``.
    Raises Conflict when it was audited or undone already."""
    approval = AutoApproval.objects.select_for_update().select_related("item__bank").get(pk=approval.pk)
    if approval.audit_verdict or approval.undone_at:
        raise Conflict("This auto-approval was audited or undone already.")
    approval.audit_verdict = AuditVerdict.AGREE if agree else AuditVerdict.DISAGREE
    approval.audited_by, approval.audited_at = author, timezone.now()
    approval.save(update_fields=["audit_verdict", "audited_by", "audited_at"])
    sent_back = False
    if not agree:
        sent_back = _send_back(approval.item, author, f"An auditor ({author}) disagreed with its auto-approval.")
    audit_record(
        action=AuditAction.AUTO_APPROVAL_AUDIT,
        bank=approval.item.bank,
        user=author,
        obj=approval.item,
        after={"verdict": approval.audit_verdict, "sent_back_to_review": sent_back},
    )
    return approval


def _send_back(item: MemoryItem, author, reason: str) -> bool:
    item_lock(item)
    if item.status != ItemStatus.APPROVED:
        return False
    return item_status_move(item=item, to=ItemStatus.PROPOSED, author=author, reason=reason, revert=True)


@transaction.atomic
def auto_approvals_undo(*, bank: Bank, since: datetime, author) -> int:
    """Undo the trust policy's approvals made in ``bank`` at or after
    ``since``: each item still approved goes back to review (proposed, a
    "reverted" version naming ``author``), its AutoApproval marked undone;
    one audit event counts them. Returns how many items went back."""
    rows = list(
        AutoApproval.objects.select_for_update()
        .filter(bank=bank, created_at__gte=since, undone_at__isnull=True)
        .select_related("item")
        .order_by("id")
    )
    who = getattr(author, "username", None) or "someone"
    back = sum(_send_back(r.item, author, f"Auto-approval undone by {who}.") for r in rows)
    AutoApproval.objects.filter(pk__in=[r.pk for r in rows]).update(undone_at=timezone.now())
    audit_record(
        action=AuditAction.BANK_UNDO_AUTO_APPROVALS,
        bank=bank,
        user=author,
        obj=bank,
        after={"since": since, "items": back},
    )
    return back
