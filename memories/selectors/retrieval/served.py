"""What agents are shown besides a search: the system block served with a
retrieval, and the agent API's lists of approved items."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from django.db.models import QuerySet

from accounts.models import Bank
from memories.models import ItemStatus, MemoryItem

SYSTEM_BLOCK_VERSION = "system_block_v1"
_PROMPTS = Path(__file__).resolve().parent.parent.parent / "prompts"


@lru_cache(maxsize=4)
def system_block_preamble(version: str = SYSTEM_BLOCK_VERSION) -> str:
    return (_PROMPTS / f"{version}.txt").read_text(encoding="utf-8").strip()


def system_block_render(items: list[MemoryItem], *, version: str = SYSTEM_BLOCK_VERSION) -> str:
    """The text an agent puts in its system prompt: the preamble, then each
    item as ``## title`` / description / content. Empty when no items."""
    if not items:
        return ""
    parts = [system_block_preamble(version)]
    for item in items:
        parts.append(f"## {item.title.strip()}\n{item.description.strip()}\n{item.content.strip()}")
    return "\n\n".join(parts)


def approved_items_list(*, bank: Bank) -> QuerySet[MemoryItem]:
    """The bank's approved items, newest approval first (what agents may see)."""
    return (
        MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED)
        .defer("embedding")
        .order_by("-approved_at", "-id")
    )


def approved_item_get(*, bank: Bank, public_id) -> MemoryItem:
    """One approved item of ``bank`` by public id. Raises MemoryItem.DoesNotExist
    for an unknown id, another bank's item, or one not approved."""
    return approved_items_list(bank=bank).get(public_id=public_id)
