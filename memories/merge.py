"""Merging a proposed item into a near-duplicate, built only from the
contract services of ``memories.services`` (no merge service exists there).

Merge = the target stays (approved if it was only proposed) and the merged
item is marked superseded with a note naming the target and who merged."""

from __future__ import annotations

from django.db import transaction

from memories.models import ItemStatus, MemoryItem


class MergeError(ValueError):
    """The merge is not possible (same item, other bank, or a dead target)."""


@transaction.atomic
def memory_item_merge(*, item: MemoryItem, into: MemoryItem, author, note: str = "") -> MemoryItem:
    """Merge ``item`` into ``into``: approve ``into`` if it is proposed, then
    supersede ``item`` with a reason naming ``into`` and ``author``. Returns
    ``into``. Raises MergeError for the same item, items of different banks,
    or a target that is rejected, archived or superseded."""
    from memories import services

    if item.pk == into.pk:
        raise MergeError("An item cannot be merged into itself.")
    if item.bank_id != into.bank_id:
        raise MergeError("Both items must belong to the same bank.")
    if into.status not in (ItemStatus.PROPOSED, ItemStatus.APPROVED):
        raise MergeError(f"The target is {into.status}; merge into a proposed or approved item.")
    if item.status in (ItemStatus.SUPERSEDED, ItemStatus.ARCHIVED):
        raise MergeError(f"This item is already {item.status}.")
    if into.status == ItemStatus.PROPOSED:
        into = services.memory_item_approve(item=into, author=author)
    who = author.get_username() if author is not None else "someone"
    reason = f"Merged into “{into.title}” ({into.public_id}) by {who}."
    if note.strip():
        reason += f" {note.strip()}"
    services.memory_item_supersede(item=item, reason=reason)
    return into
