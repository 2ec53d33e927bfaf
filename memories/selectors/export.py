"""The bank's items as portable records (the JSON Lines export)."""

from __future__ import annotations

from collections.abc import Iterator

from accounts.models import Bank
from memories.models import ItemStatus, MemoryItem

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
