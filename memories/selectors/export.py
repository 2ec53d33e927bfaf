"""The bank's items as portable records: the JSON Lines export, and the
`reasoning-bank` library's own memory format (approved items)."""

from __future__ import annotations

from collections.abc import Iterator

from accounts.models import Bank
from memories.models import ItemOrigin, ItemStatus, MemoryItem

EXPORT_FIELDS = (
    "title",
    "description",
    "content",
    "tags",
    "status",
    "origin",
    "source_task_id",
    "created_at",
    "approved_at",
)


def memory_items_export(*, bank: Bank, status: str = "") -> Iterator[dict]:
    """The bank's items (of ``status``, else all but superseded) as dicts of
    EXPORT_FIELDS plus ``id``, oldest first, streamed from the database."""
    qs = MemoryItem.objects.filter(bank=bank)
    qs = qs.filter(status=status) if status else qs.exclude(status=ItemStatus.SUPERSEDED)
    for item in qs.only("public_id", *EXPORT_FIELDS).order_by("created_at", "id").iterator(chunk_size=500):
        row = {"id": str(item.public_id)}
        for name in EXPORT_FIELDS:
            value = getattr(item, name)
            row[name] = value.isoformat() if hasattr(value, "isoformat") else value
        yield row


# The `reasoning-bank` library's MemoryItem (reasoning_bank/item.py), as its
# ReasoningBank.export() writes it and ReasoningBank.import_() reads it: one
# ``model_dump_json()`` per line, these fields exactly.
REASONING_BANK_FIELDS = (
    "id",
    "title",
    "description",
    "content",
    "source",
    "task_signature",
    "scope",
    "embedding",
    "created_at",
    "last_used_at",
    "use_count",
    "confidence",
    "related_ids",
)
REASONING_BANK_SOURCES = ("success", "failure", "matts_contrast", "manual")
_SOURCE_OF_ORIGIN = {
    ItemOrigin.SUCCESS: "success",
    ItemOrigin.FAILURE: "failure",
    ItemOrigin.MATTS_PARALLEL: "matts_contrast",
}


def _library_source(item: MemoryItem) -> str:
    """The library knows four sources; a sequential MaTTS item is learnt from
    one run, so it takes that run's verdict; hand-written and imported are manual."""
    if item.origin in _SOURCE_OF_ORIGIN:
        return _SOURCE_OF_ORIGIN[item.origin]
    if item.origin == ItemOrigin.MATTS_SEQUENTIAL and item.verdict_label in ("success", "failure"):
        return item.verdict_label
    return "manual"


def memory_items_export_reasoning_bank(*, bank: Bank, scope: str = "global") -> Iterator[dict]:
    """The bank's approved items as the `reasoning-bank` library's memory
    records (REASONING_BANK_FIELDS), oldest approval first: ``task_signature``
    is the task it was learnt from (empty for hand-written items), ``scope``
    the library scope to file them under (its default, ``global``), no
    ``embedding`` (the library embeds on import with its own model),
    ``use_count`` / ``last_used_at`` how often and when this service served it,
    ``confidence`` 1 (a reviewer approved it), ``related_ids`` empty."""
    qs = (
        MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED)
        .select_related("experience")
        .only(
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
        .order_by("approved_at", "id")
    )
    for item in qs.iterator(chunk_size=500):
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
