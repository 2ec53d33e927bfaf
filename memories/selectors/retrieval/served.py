"""What agents are shown besides a search: the system block served with a
retrieval, the agent API's lists of approved items, and a run's retrievals."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from django.db import models
from django.db.models import QuerySet

from accounts.models import Bank
from memories.models import ItemStatus, MemoryItem, RetrievalEvent
from memories.selectors.learning import servable_q
from memories.selectors.retrieval.filters import NO_FILTERS

SYSTEM_BLOCK_VERSION = "system_block_v2"
# A lesson cannot open or close the tags that delimit lessons (it is data, not a message to the agent).
_LESSON_TAG = re.compile(r"<(\s*/?\s*)(lesson)\b", re.IGNORECASE)
_PROMPTS = Path(__file__).resolve().parent.parent.parent / "prompts"


@lru_cache(maxsize=4)
def system_block_preamble(version: str = SYSTEM_BLOCK_VERSION) -> str:
    return (_PROMPTS / f"{version}.txt").read_text(encoding="utf-8").strip()


def system_block_render(items: list[MemoryItem], *, version: str = SYSTEM_BLOCK_VERSION) -> str:
    """The text an agent puts in its system prompt: the preamble (which frames
    the lessons as data), then each item as ``## title`` / description /
    content between ``<lesson>`` and ``</lesson>`` (tags inside an item's text
    are defused). Empty when no items."""
    if not items:
        return ""
    parts = [system_block_preamble(version)]
    for item in items:
        text = _LESSON_TAG.sub(
            r"&lt;\1\2", f"## {item.title.strip()}\n{item.description.strip()}\n{item.content.strip()}"
        )
        parts.append(f"<lesson>\n{text}\n</lesson>")
    return "\n\n".join(parts)


def approved_items_list(*, bank: Bank) -> QuerySet[MemoryItem]:
    """The bank's approved items that may be served, newest approval first (what agents may see: as
    retrieval, none expired or suspended, none with an unconfirmed risk finding or refused by the bank's
    trust policy)."""
    return (
        MemoryItem.objects.filter(servable_q(), NO_FILTERS.q(), bank=bank, status=ItemStatus.APPROVED)
        .defer("embedding")
        .order_by("-approved_at", "-id")
    )


def approved_item_get(*, bank: Bank, public_id) -> MemoryItem:
    """One approved item of ``bank`` by public id. Raises MemoryItem.DoesNotExist
    for an unknown id, another bank's item, or one not approved."""
    return approved_items_list(bank=bank).get(public_id=public_id)


def run_retrievals(*, first_id: int | None) -> list[RetrievalEvent]:
    """The retrievals of the run whose first retrieval has primary key
    ``first_id`` (what a trajectory links), first one first; [] for None."""
    if first_id is None:
        return []
    return list(
        RetrievalEvent.objects.filter(models.Q(pk=first_id) | models.Q(run_id=first_id))
        .order_by("pk")
        .only("pk", "public_id", "query", "arm", "results", "withheld", "created_at")
    )
