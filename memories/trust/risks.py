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
from memories.trust.anomaly.detect import memory_item_anomaly_rescan, memory_items_anomaly_scan
from memories.trust.paraphrase.detector import DETECTOR as PARAPHRASE
from memories.trust.paraphrase.services import memory_items_paraphrase_scan
from memories.trust.provenance.findings import DETECTOR as PROVENANCE
from memories.trust.provenance.findings import copied_instructions, topic_only
from memories.trust.provenance.services import item_provenance_recompute, item_values, provenance_row, provenances_store
from memories.trust.provenance.spans import Sources, item_spans
from memories.trust.risk_events import item_suspended_announce
from memories.trust.risk_models import FindingSource, RiskFinding
from memories.trust.rules import RULES_VERSION, scan_item, scan_text
from memories.trust.rules.findings import Finding, Kind

NEW_RISKS_REASON = "New risk findings: not served until a reviewer approves it again, confirming them."


# Kinds whose excerpt is the item's own text even when they name a step (the step it was copied from).
_COPIED = (Kind.OBSERVATION_COPY, Kind.COPIED_INSTRUCTION)


def _row(item: MemoryItem, finding: Finding) -> RiskFinding:
    return RiskFinding(
        item=item,
        kind=finding.kind,
        excerpt=finding.excerpt,
        step=finding.step,
        found_in=FindingSource.ITEM if finding.step is None or finding.kind in _COPIED else FindingSource.STEP,
        detector=PROVENANCE if finding.kind == Kind.COPIED_INSTRUCTION else RULES_VERSION,
    )


def memory_items_risk_scan(
    *, items: Sequence[MemoryItem], steps: Sequence[dict] = (), task: str = ""
) -> list[RiskFinding]:
    """Scan items just proposed from one trajectory (``steps``: its steps, as
    stored; ``task``: what the user asked), store each one's provenance (which
    spans came from where) and their findings in one insert: the word rules'
    (less the topic-only hits in the distiller's own words, provenance.findings)
    and the instructions copied from external content. Items that are not new
    proposals (a lesson the bank already held, returned by
    memory_items_propose with ``supported_by`` set) are skipped."""
    rows, provenances = [], []
    sources = Sources(list(steps), task)
    for item in items:
        if getattr(item, "supported_by", None) is not None or item.pk is None:
            continue
        values = item_values(item)
        spans = item_spans(**values, sources=sources)
        provenances.append(provenance_row(item, spans))
        found = scan_item(**values, steps=list(steps))
        rows += [_row(item, f) for f in found if not topic_only(f, values, spans, task, steps)]
        rows += [_row(item, f) for f in copied_instructions(values, spans)]
    if provenances:
        provenances_store(provenances)
    stored = RiskFinding.objects.bulk_create(rows) if rows else []
    # The detectors that read more than the text: the run's external content, the bank's approved items.
    stored += memory_items_paraphrase_scan(items=items, steps=steps, task=task)
    stored += items_actions_scan(items=items, task=task, steps=steps)
    return stored + memory_items_anomaly_scan(items=items)


@transaction.atomic
def memory_item_risk_rescan(*, item: MemoryItem) -> list[RiskFinding]:
    """Scan an edited item's text again. Findings in its source steps stay;
    a copied-observation finding stays while its excerpt is still in the text;
    the item's own findings are replaced by the new scan, and a finding a
    reviewer confirmed stays confirmed while it is found again unchanged. An
    approved item with a new unconfirmed finding is flagged for review (and
    not served until a reviewer approves it again, confirming). Returns the
    item's findings now. Its provenance is computed again from the source
    steps; when they cannot be read (written by a person, imported, purged)
    it becomes unknown, the word rules' hits all stay and so do the copied
    instructions still in the text."""
    old = list(RiskFinding.objects.select_for_update().filter(item=item))
    text = f"{item.title}\n{item.description}\n{item.content}"
    confirmed = {(f.kind, f.excerpt): f for f in old if f.confirmed}
    spans, inputs = item_provenance_recompute(item)
    keep = [
        f
        for f in old
        if (f.found_in == FindingSource.STEP and f.kind not in _COPIED)
        or (f.kind == Kind.OBSERVATION_COPY and f.excerpt in text)
        # A copied instruction found by the source steps' provenance (now unreadable) or a paraphrase of one:
        # while its sentence is still in the text.
        or (f.kind == Kind.COPIED_INSTRUCTION and (spans is None or f.detector == PARAPHRASE) and f.excerpt in text)
    ]
    values = item_values(item)
    found = [f for field in values.values() for f in scan_text(field)]
    if spans is not None:
        found = [f for f in found if not topic_only(f, values, spans, inputs.task)]
        found += copied_instructions(values, spans)
    fresh = []
    for finding in found:
        row = _row(item, finding)
        before = confirmed.get((row.kind, row.excerpt))
        if before is not None:
            row.confirmed, row.confirmed_at = True, before.confirmed_at
            row.confirmed_by_id, row.confirmed_token_id = before.confirmed_by_id, before.confirmed_token_id
        if (row.kind, row.excerpt) not in {(r.kind, r.excerpt) for r in fresh}:
            fresh.append(row)
    RiskFinding.objects.filter(item=item).exclude(pk__in=[f.pk for f in keep]).delete()
    RiskFinding.objects.bulk_create(fresh)
    # The detectors that read the bank (what it approved before), on the new text.
    fresh += item_actions_rescan(item=item, task=inputs.task, steps=[] if spans is None else inputs.steps)
    if item.status == ItemStatus.APPROVED and any(not f.confirmed for f in fresh):
        item.needs_review_reason = NEW_RISKS_REASON
        item.save(update_fields=["needs_review_reason", "updated_at"])
    fresh += memory_item_anomaly_rescan(item=item)  # flags an approved item itself, with its own reason
    if item.status == ItemStatus.APPROVED and any(not f.confirmed for f in fresh):
        item_suspended_announce(item=item, findings=fresh)  # webhooks: item.suspended, after commit
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
        item_suspended_announce(item=item, findings=rows)  # webhooks: item.suspended, after commit
    return rows
