"""Refused lessons: archive an approved item as wrong (its repeats are then
refused like a rejection's), and reopen a refused item when its repeats make
a case for it."""

from __future__ import annotations

from django.db import transaction

from memories.items.models import ItemStatus, MemoryItem
from memories.items.transitions import item_status_move
from memories.review.collaboration import item_version_check
from reasoningbank_site.errors import Conflict, Invalid


@transaction.atomic
def memory_item_archive_as_wrong(
    *, item: MemoryItem, author, reason: str, seen_version: int | None = None, token=None
) -> MemoryItem:
    """Stop serving an approved item because it is wrong, keeping
    ``reason``: later distillations of the same lesson are recorded on it as
    repeats, never queued. Raises Invalid for an empty reason, Conflict for
    an item that is not approved, StaleVersion as memory_item_archive."""
    reason = (reason or "").strip()
    if not reason:
        raise Invalid("Say why the item is wrong: the reason is shown with its repeats.")
    item_version_check(item=item, seen_version=seen_version)

    def wrong(item: MemoryItem) -> list[str]:
        item.archived_as_wrong = True
        return ["archived_as_wrong"]

    item_status_move(
        item=item,
        to=ItemStatus.ARCHIVED,
        author=author,
        reason=reason,
        prepare=wrong,
        action="archived-as-wrong",
        token=token,
    )
    return item


@transaction.atomic
def memory_item_reopen(
    *, item: MemoryItem, author, note: str = "", seen_version: int | None = None, token=None
) -> MemoryItem:
    """Put a rejected (or archived-as-wrong) item back in the review queue as
    proposed: its repeats stay on it as evidence, its reason is kept in the
    history. Raises Conflict for any other item, StaleVersion when
    ``seen_version`` is given and the item changed since."""
    item_version_check(item=item, seen_version=seen_version)
    if not (item.status == ItemStatus.REJECTED or (item.status == ItemStatus.ARCHIVED and item.archived_as_wrong)):
        raise Conflict(
            f"Only rejected or archived-as-wrong items can be reopened; this one is {item.status}.",
            code="invalid_transition",
        )

    def reopened(item: MemoryItem) -> list[str]:
        item.archived_as_wrong = False
        return ["archived_as_wrong"]

    item_status_move(
        item=item,
        to=ItemStatus.PROPOSED,
        author=author,
        reason=note.strip(),
        prepare=reopened,
        action="reopened",
        token=token,
    )
    return item
