"""After Impact has measured: each item's effect kept on it (what utility
ranking reads), items that hurt proposed for retirement with their evidence
(and, when the bank chose so, suspended from serving until a reviewer
decides), a reviewer's answer, and the supersede action that links an old
item to its replacement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import ApiToken, Bank
from memories.items.models import ItemStatus, MemoryItem
from memories.items.transitions import item_status_move
from memories.items.versions import VersionChange, item_lock, item_version_record, items_version_record
from memories.learning.selectors import bank_learning
from memories.review.collaboration import item_version_check
from reasoningbank_site.errors import Conflict, Invalid


@dataclass(frozen=True)
class ItemEffect:
    """Impact's verdict on one item: served − withheld success rate
    (``effect``) over ``n`` judged retrievals, and whether it hurts after the
    false-discovery-rate control; ``evidence`` is what the reviewer is shown."""

    public_id: str
    effect: float | None
    n: int
    hurts: bool = False
    evidence: dict = field(default_factory=dict)


@transaction.atomic
def memory_items_outcomes_record(*, bank: Bank, effects: Sequence[ItemEffect]) -> list[MemoryItem]:
    """Keep each effect on its item of ``bank`` (``outcome_effect``,
    ``outcome_n``), and propose every approved item that hurts and is not
    proposed yet for retirement: its reason and evidence are set, a
    "proposed-for-retirement" version written and, when the bank's policy
    says so, it is suspended from serving (audited as
    ``memory_item.suspend``). Returns the items newly proposed."""
    by_id = {str(e.public_id): e for e in effects}
    if not by_id:
        return []
    items = list(
        MemoryItem.objects.select_for_update()
        .filter(bank=bank, public_id__in=list(by_id))
        .defer("embedding")
        .order_by("pk")
    )
    suspend = bank_learning(bank=bank).suspend_when_hurting
    now = timezone.now()
    proposed = []
    for item in items:
        effect = by_id[str(item.public_id)]
        item.outcome_effect, item.outcome_n = effect.effect, effect.n
        if (
            effect.hurts
            and item.status == ItemStatus.APPROVED
            and not item.retirement_reason
            and _kept_evidence_grew(item, effect)
        ):
            item.retirement_reason = _reason(effect)
            item.retirement_evidence = {**effect.evidence, "proposed_at": now.isoformat()}
            item.suspended = suspend
            item.updated_at = now
            proposed.append(item)
    MemoryItem.objects.bulk_update(
        items,
        ["outcome_effect", "outcome_n", "retirement_reason", "retirement_evidence", "suspended", "updated_at"],
    )
    if proposed:
        items_version_record(
            changes=[
                VersionChange(item=item, action="proposed-for-retirement", note=item.retirement_reason)
                for item in proposed
            ]
        )
        for item in proposed:
            if item.suspended:
                item.bank = bank
                audit_record(
                    action=AuditAction.MEMORY_ITEM_SUSPEND,
                    bank=bank,
                    obj=item,
                    before={"suspended": False},
                    after={"suspended": True, "reason": item.retirement_reason},
                )
    return proposed


def _kept_evidence_grew(item: MemoryItem, effect: ItemEffect) -> bool:
    """A reviewer who kept ``item`` in service decided on the evidence of
    its judged retrievals then (``kept_at_n``): Impact's all-time effect
    proposes it again only once those have doubled, not at the next run."""
    kept_at_n = (item.retirement_evidence or {}).get("kept_at_n")
    return kept_at_n is None or effect.n >= 2 * max(int(kept_at_n), 1)


def _reason(effect: ItemEffect) -> str:
    served, withheld = effect.evidence.get("served_rate"), effect.evidence.get("withheld_rate")
    rates = ""
    if served is not None and withheld is not None:
        rates = f": agents served it succeeded {served * 100:.0f}% of the time, {withheld * 100:.0f}% without it"
    return f"Impact says this item hurts{rates} ({effect.n} judged retrievals, 10% false-discovery rate)."


@transaction.atomic
def memory_item_retirement_keep(
    *, item: MemoryItem, author, note: str = "", seen_version: int | None = None, token: ApiToken | None = None
) -> MemoryItem:
    """A reviewer keeps an item proposed for retirement: the proposal is
    cleared and a suspended item is served again (audited); it is proposed
    again only once its judged retrievals have doubled since. To retire it
    instead, archive it. No-op for an item not proposed."""
    item_version_check(item=item, seen_version=seen_version)
    item_lock(item)
    if not item.retirement_reason:
        return item
    was_suspended = item.suspended
    item.retirement_reason, item.suspended = "", False
    item.retirement_evidence = {
        **(item.retirement_evidence or {}),
        "kept_at_n": item.outcome_n or 0,
        "kept_at": timezone.now().isoformat(),
    }
    item.save(update_fields=["retirement_reason", "retirement_evidence", "suspended", "updated_at"])
    item_version_record(item=item, action="kept", author=author, note=note.strip() or "kept in service", token=token)
    if was_suspended:
        audit_record(
            action=AuditAction.MEMORY_ITEM_UNSUSPEND,
            bank=item.bank,
            user=author,
            token=token,
            obj=item,
            before={"suspended": True},
            after={"suspended": False},
        )
    return item


@transaction.atomic
def memory_item_supersede_with(
    *,
    item: MemoryItem,
    replacement: MemoryItem,
    author,
    seen_version: int | None = None,
    token: ApiToken | None = None,
) -> MemoryItem:
    """Retire ``item`` in favour of ``replacement`` (an approved or proposed
    item of the same bank): ``item`` becomes superseded (terminal), linked to
    it (``superseded_by``), with a reason naming it. Raises Invalid for an
    item replacing itself or a replacement of another bank or not proposed
    or approved; Conflict when ``item`` cannot be superseded."""
    if replacement.pk == item.pk:
        raise Invalid("An item cannot replace itself.")
    if replacement.bank_id != item.bank_id:
        raise Invalid("The replacement must be an item of the same bank.")
    if replacement.status not in (ItemStatus.APPROVED, ItemStatus.PROPOSED):
        raise Invalid(f"The replacement must be approved or proposed, not {replacement.status}.")
    item_version_check(item=item, seen_version=seen_version)

    def link(item: MemoryItem) -> list[str]:
        item.superseded_by = replacement
        item.suspended = False
        return ["superseded_by", "suspended"]

    reason = f"Replaced by “{replacement.title}” ({replacement.public_id})."
    moved = item_status_move(
        item=item, to=ItemStatus.SUPERSEDED, author=author, reason=reason, prepare=link, token=token
    )
    if not moved:
        raise Conflict("This item is already superseded.", code="invalid_transition")
    return item
