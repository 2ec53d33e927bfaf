"""The bank's items as portable records: the JSON Lines export (a full copy
of the bank, not what it serves), and the `reasoning-bank` library's record
format (its export of what is served is memories.serving.export)."""

from __future__ import annotations

from collections.abc import Iterator

from accounts.models import Bank
from memories.items.models import ItemStatus, MemoryItem
from reasoningbank_site.keyset import keyset_chunks

CHUNK = 500
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
    EXPORT_FIELDS plus ``id``, oldest first, streamed from the database a
    keyset chunk at a time (the first row does not wait for the whole bank)."""
    qs = MemoryItem.objects.filter(bank=bank)
    qs = qs.filter(status=status) if status else qs.exclude(status=ItemStatus.SUPERSEDED)
    rows = keyset_chunks(qs.only("public_id", *EXPORT_FIELDS), order=("created_at", "id"), chunk=CHUNK)
    for item in (item for chunk in rows for item in chunk):
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
