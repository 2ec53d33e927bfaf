"""Taking a decision back: the toast's Undo (a few seconds after approve,
reject or archive) and the Revert button of the item's history are the same
service. A revert is a status move of its own (ITEM_REVERTS), recorded as a
"reverted" version and audited like every item change."""

from __future__ import annotations

from django.db import transaction

from memories.embedding.items import item_embed_enqueue, item_embedding_is_current
from memories.items.models import ItemStatus, MemoryItem, MemoryItemVersion
from memories.items.transitions import ITEM_REVERTS, item_status_move
from memories.items.versions import item_lock
from memories.review.votes import item_returned_flag
from reasoningbank_site.errors import Conflict, NotFound

DECISION_NAMES = {
    ItemStatus.APPROVED: "approval",
    ItemStatus.REJECTED: "rejection",
    ItemStatus.ARCHIVED: "archiving",
}


def _who(version: MemoryItemVersion) -> str:
    return version.author.get_username() if version.author_id else "the pipeline"


def memory_item_last_decision(*, item: MemoryItem) -> MemoryItemVersion | None:
    """The version of the item's latest decision (approve, reject, archive)
    when nothing has changed its status since — what an Undo would revert —
    else None."""
    latest, *before = item.versions.order_by("-number")[:2] or [None]
    if latest is None or latest.action not in ITEM_REVERTS or latest.status != item.status:
        return None
    if before and before[0].status == latest.status:
        return None  # e.g. an approval that only cleared a review flag: no status to go back to
    return latest


@transaction.atomic
def memory_item_revert(*, item: MemoryItem, decision: int, author) -> MemoryItem:
    """Take back the decision recorded as version ``decision`` of ``item``:
    the item returns to the status it had just before (approval → proposed,
    rejected or archived; rejection → proposed; archiving → approved), with
    that status's reason and approver restored, recorded as a "reverted"
    version and audited (memory_item.reverted). An item that is approved
    again and lacks a current embedding is embedded by a worker (served once
    embedded). Raises NotFound when the item has no such version; Conflict
    when that version is no decision, changed no status, or the item's status
    changed since (someone decided again, or it was already reverted)."""
    item_lock(item)
    versions = list(item.versions.select_related("author").order_by("number"))
    version = next((v for v in versions if v.number == decision), None)
    if version is None:
        raise NotFound(f"This item has no version {decision}.")
    name = DECISION_NAMES.get(version.action)
    if name is None:
        raise Conflict(
            f"Version {decision} ({version.action}) is not a decision; only approvals, rejections and "
            "archivings can be reverted."
        )
    earlier = [v for v in versions if v.number < decision]
    # Every item starts proposed (or is created approved, which writes a "created" version first).
    before = earlier[-1].status if earlier else ItemStatus.PROPOSED
    if before == version.status:
        raise Conflict(f"Version {decision} changed no status: there is nothing to revert.")
    later = [v for v in versions if v.number > decision and (v.status != version.status or v.action == "reverted")]
    if later or item.status != version.status:
        since = later[-1] if later else None
        what = f"it was {since.action} by {_who(since)} since (version {since.number})" if since else "it changed since"
        raise Conflict(f"This {name} can no longer be reverted: {what}. The item is {item.status} now.")
    if before not in ITEM_REVERTS.get(version.status, ()):
        raise Conflict(f"A {name} cannot be reverted to {before}.")

    def restore(item: MemoryItem) -> list[str]:
        # The reason and approver the item had in the status it returns to.
        reason = next((v.note for v in reversed(earlier) if v.action == before), "") if before != "proposed" else ""
        item.status_reason = reason
        fields = ["status_reason"]
        if before == ItemStatus.PROPOSED and (flag := item_returned_flag(item)):
            # Its reviewers' decisions are all in: nobody can vote again, so an owner or admin decides.
            item.needs_review_reason = flag
            fields.append("needs_review_reason")
        if version.status == ItemStatus.APPROVED:
            # The version that approved it before: an approval, or its creation as approved.
            approval = next(
                (
                    v
                    for v in reversed(earlier)
                    if v.status == ItemStatus.APPROVED and v.action in ("approved", "created")
                ),
                None,
            )
            item.approved_by = approval.author if approval else None
            item.approved_at = approval.created_at if approval else None
            fields += ["approved_by", "approved_at"]
        return fields

    note = f"reverted the {name} of version {decision} by {_who(version)}"
    # reason=note names the version's note; restore() then sets the status reason itself.
    item_status_move(item=item, to=before, author=author, reason=note, prepare=restore, revert=True)
    if item.status == ItemStatus.APPROVED and not item_embedding_is_current(item):
        item_embed_enqueue(item.pk)
    return item
