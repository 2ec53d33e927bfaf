"""Risk findings on items: recorded when distilled items are proposed,
re-scanned when an item's text is edited, and confirmed (with who confirmed)
when a reviewer approves an item knowing of them."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import ApiToken
from memories.items.models import ItemStatus, MemoryItem
from memories.trust.actions.services import item_actions_rescan, items_actions_scan
from memories.trust.risk_models import FindingSource, RiskFinding
from memories.trust.rules import RULES_VERSION, scan_item, scan_text
from memories.trust.rules.findings import Finding, Kind

NEW_RISKS_REASON = "New risk findings: not served until a reviewer approves it again, confirming them."


def _row(item: MemoryItem, finding: Finding) -> RiskFinding:
    return RiskFinding(
        item=item,
        kind=finding.kind,
        excerpt=finding.excerpt,
        step=finding.step,
        found_in=FindingSource.ITEM
        if finding.step is None or finding.kind == Kind.OBSERVATION_COPY
        else FindingSource.STEP,
        detector=RULES_VERSION,
    )


def memory_items_risk_scan(
    *, items: Sequence[MemoryItem], steps: Sequence[dict] = (), task: str = ""
) -> list[RiskFinding]:
    """Scan items just proposed from one trajectory (``steps``: its steps, as
    stored; ``task``: what the user asked) and store their findings in one insert. Items that are not new
    proposals (a lesson the bank already held, returned by
    memory_items_propose with ``supported_by`` set) are skipped."""
    rows = []
    for item in items:
        if getattr(item, "supported_by", None) is not None or item.pk is None:
            continue
        found = scan_item(title=item.title, description=item.description, content=item.content, steps=list(steps))
        rows += [_row(item, f) for f in found]
    stored = RiskFinding.objects.bulk_create(rows) if rows else []
    return stored + items_actions_scan(items=items, task=task)


@transaction.atomic
def memory_item_risk_rescan(*, item: MemoryItem) -> list[RiskFinding]:
    """Scan an edited item's text again. Findings in its source steps stay;
    a copied-observation finding stays while its excerpt is still in the text;
    the item's own findings are replaced by the new scan, and a finding a
    reviewer confirmed stays confirmed while it is found again unchanged. An
    approved item with a new unconfirmed finding is flagged for review (and
    not served until a reviewer approves it again, confirming). Returns the
    item's findings now."""
    old = list(RiskFinding.objects.select_for_update().filter(item=item))
    text = f"{item.title}\n{item.description}\n{item.content}"
    confirmed = {(f.kind, f.excerpt): f for f in old if f.confirmed}
    keep = [
        f
        for f in old
        if (f.found_in == FindingSource.STEP and f.kind != Kind.OBSERVATION_COPY)
        or (f.kind == Kind.OBSERVATION_COPY and f.excerpt in text)
    ]
    fresh = []
    for field in (item.title, item.description, item.content):
        for finding in scan_text(field):
            row = _row(item, finding)
            before = confirmed.get((row.kind, row.excerpt))
            if before is not None:
                row.confirmed, row.confirmed_at = True, before.confirmed_at
                row.confirmed_by_id, row.confirmed_token_id = before.confirmed_by_id, before.confirmed_token_id
            if (row.kind, row.excerpt) not in {(r.kind, r.excerpt) for r in fresh}:
                fresh.append(row)
    RiskFinding.objects.filter(item=item).exclude(pk__in=[f.pk for f in keep]).delete()
    RiskFinding.objects.bulk_create(fresh)
    fresh += item_actions_rescan(item=item)
    if item.status == ItemStatus.APPROVED and any(not f.confirmed for f in fresh):
        item.needs_review_reason = NEW_RISKS_REASON
        item.save(update_fields=["needs_review_reason", "updated_at"])
    return sorted(keep, key=lambda f: f.pk) + fresh


def item_risks_pending(item: MemoryItem) -> list[RiskFinding]:
    """The item's findings nobody has confirmed yet, oldest first."""
    return list(RiskFinding.objects.filter(item=item, confirmed=False).order_by("id"))


def memory_item_risks_confirm(*, item: MemoryItem, author, token: ApiToken | None = None) -> int:
    """Record that ``author`` (or ``token``) read the item's unconfirmed
    findings and approves it anyway: each is marked confirmed with who and
    when, and one audit event (``memory_item.risks_confirm``) lists them.
    Returns how many were confirmed (0: nothing recorded)."""
    pending = item_risks_pending(item)
    if not pending:
        return 0
    now = timezone.now()
    RiskFinding.objects.filter(pk__in=[f.pk for f in pending]).update(
        confirmed=True, confirmed_at=now, confirmed_by=author, confirmed_token=token
    )
    audit_record(
        action=AuditAction.MEMORY_ITEM_CONFIRM_RISKS,
        bank=item.bank,
        user=author,
        token=token,
        obj=item,
        after={"findings": [{"kind": f.kind, "excerpt": f.excerpt, "step": f.step} for f in pending]},
    )
    return len(pending)


@transaction.atomic
def memory_item_findings_add(*, item: MemoryItem, findings: Sequence[Finding], detector: str) -> list[RiskFinding]:
    """Record ``findings`` of another detector (an LLM check: its prompt version) on ``item``,
    skipping any the item already has; an approved item is flagged for review (and not served
    until a reviewer approves it again, confirming)."""
    have = set(RiskFinding.objects.filter(item=item).values_list("kind", "excerpt"))
    rows = []
    for finding in findings:
        if (finding.kind, finding.excerpt) not in have:
            have.add((finding.kind, finding.excerpt))
            rows.append(RiskFinding(item=item, kind=finding.kind, excerpt=finding.excerpt, detector=detector))
    RiskFinding.objects.bulk_create(rows)
    if rows and MemoryItem.objects.filter(pk=item.pk, status=ItemStatus.APPROVED).exists():
        MemoryItem.objects.filter(pk=item.pk).update(needs_review_reason=NEW_RISKS_REASON)
    return rows
