"""The export of what a bank serves: its served items (memories.serving) as
the `reasoning-bank` library's memory records."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain

from accounts.models import Bank
from memories.items.models import ItemOrigin, MemoryItem
from memories.serving.lists import served_items
from reasoningbank_site.keyset import keyset_chunks

_SOURCE_OF_ORIGIN = {
    ItemOrigin.SUCCESS: "success",
    ItemOrigin.FAILURE: "failure",
    ItemOrigin.MATTS_PARALLEL: "matts_contrast",
}
CHUNK = 500


def _library_source(item: MemoryItem) -> str:
    """The library knows four sources; a sequential MaTTS item is learnt from
    one run, so it takes that run's verdict; hand-written and imported are manual."""
    if item.origin in _SOURCE_OF_ORIGIN:
        return _SOURCE_OF_ORIGIN[item.origin]
    if item.origin == ItemOrigin.MATTS_SEQUENTIAL and item.verdict_label in ("success", "failure"):
        return item.verdict_label
    return "manual"


def served_items_export_reasoning_bank(*, bank: Bank, scope: str = "global") -> Iterator[dict]:
    """What the bank serves (its production release, each item with its text
    as released) as the `reasoning-bank` library's memory
    records (REASONING_BANK_FIELDS), oldest approval first: ``task_signature``
    is the task it was learnt from (empty for hand-written items), ``scope``
    the library scope to file them under (its default, ``global``), no
    ``embedding`` (the library embeds on import with its own model),
    ``use_count`` / ``last_used_at`` how often and when this service served it,
    ``confidence`` 1 (a reviewer approved it), ``related_ids`` empty."""
    served = served_items(bank=bank)
    qs = served.items.select_related("experience").only(
        "public_id",
        "title",
        "description",
        "content",
        "origin",
        "verdict_label",
        "created_at",
        "approved_at",
        "served_count",
        "last_served_at",
        "experience__task",
    )
    # Keyset chunks (the first record does not wait for the whole bank), in the order ``approved_at, id``
    # has in PostgreSQL: the approved times first, then the items without one (nulls sort last) by id.
    approved = keyset_chunks(qs.filter(approved_at__isnull=False), order=("approved_at", "id"), chunk=CHUNK)
    never = keyset_chunks(qs.filter(approved_at__isnull=True), order=("id", "public_id"), chunk=CHUNK)
    for chunk in chain(approved, never):
        yield from _records(served.page_of(chunk), scope)


def _records(items: list[MemoryItem], scope: str) -> Iterator[dict]:
    for item in items:
        yield {
            "id": str(item.public_id),
            "title": item.title,
            "description": item.description,
            "content": item.content,
            "source": _library_source(item),
            "task_signature": item.experience.task if item.experience_id else "",
            "scope": scope,
            "embedding": None,
            "created_at": (item.approved_at or item.created_at).isoformat(),
            "last_used_at": item.last_served_at.isoformat() if item.last_served_at else None,
            "use_count": item.served_count,
            "confidence": 1.0,
            "related_ids": [],
        }
