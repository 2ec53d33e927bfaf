"""Importing items: records parsed from a JSON Lines (or JSON array) upload
become proposed items of origin ``import``, all or nothing. Two record shapes:
ours (a bank's export: title, description, content, tags) and the
`reasoning-bank` library's (its ``ReasoningBank.export()``: recognised by its
``source`` and ``task_signature`` fields)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from accounts.models import Bank
from memories.embedding.model import embeddings_prefetched, item_embedding_text
from memories.items.export import REASONING_BANK_SOURCES
from memories.items.models import (
    CONTENT_MAX,
    DESCRIPTION_MAX,
    TITLE_MAX,
    ItemOrigin,
    ItemStatus,
    MemoryItem,
    normalize_tags,
)
from memories.items.services import memory_item_create

IMPORT_MAX_ITEMS = 1000


@dataclass
class ImportReport:
    created: list[MemoryItem] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)  # 1-based record numbers already in the bank
    # 1-based record numbers the one near-duplicate check recorded as "seen again" (or as a repeat of a
    # refused item) on an item the bank holds, instead of creating them
    seen_again: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "record 3: …", nothing created when any


def is_reasoning_bank_record(record: dict) -> bool:
    """A memory record of the `reasoning-bank` library (its required fields besides the text)."""
    return "source" in record and "task_signature" in record


def _library_note(record: dict) -> str:
    task = str(record.get("task_signature") or "").strip()
    parts = [f"Imported from reasoning-bank (id {str(record.get('id') or '?')[:80]}, source {record['source']}"]
    if isinstance(record.get("use_count"), int) and record["use_count"]:
        parts.append(f", used {record['use_count']} times")
    note = "".join(parts) + ")."
    return note + (f" Task: {task[:300]}" if task else "")


def memory_items_import(*, bank: Bank, author, records: list) -> ImportReport:
    """Create ``records`` (dicts with title, description, content and
    optional tags — e.g. a bank's export — or the `reasoning-bank` library's
    memory records, whose description may be empty and whose ``source``
    must be one of the library's; their id, source and task are kept in the
    item's first version note) in ``bank`` as **proposed** items of origin
    ``import``, so reviewers decide what is served. All or nothing: any invalid record
    (missing or empty field, over-long title, bad tags, not an object) creates none
    and is reported by its 1-based number. A record whose title and content
    the bank already has (in any status but superseded) is skipped as a
    duplicate; any other goes through the one near-duplicate check of
    ``memory_item_create``, so a near-duplicate of an item the bank holds
    is recorded there as "seen again" (listed in ``seen_again``). At most IMPORT_MAX_ITEMS records. Raises nothing for bad
    input: the report's ``errors`` say what is wrong."""
    report = ImportReport()
    if not isinstance(records, list) or not records:
        report.errors.append("The file holds no items (expected a JSON array or JSON Lines of objects).")
        return report
    if len(records) > IMPORT_MAX_ITEMS:
        report.errors.append(f"{len(records)} items; one import takes at most {IMPORT_MAX_ITEMS}.")
        return report
    clean = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            report.errors.append(f"record {number}: expected an object with title, description and content")
            continue
        values = {name: record.get(name) for name in ("title", "description", "content")}
        library = is_reasoning_bank_record(record)
        if library and values["description"] is None:
            values["description"] = ""
        missing = [
            name
            for name, value in values.items()
            if not isinstance(value, str) or not (value.strip() or (library and name == "description"))
        ]
        if missing:
            report.errors.append(f"record {number}: missing or empty {', '.join(missing)}")
            continue
        too_long = [
            f"{name} longer than {limit} characters"
            for name, limit in (("title", TITLE_MAX), ("description", DESCRIPTION_MAX), ("content", CONTENT_MAX))
            if len(values[name].strip()) > limit
        ]
        if too_long:
            report.errors.append(f"record {number}: {', '.join(too_long)}")
            continue
        if library and record.get("source") not in REASONING_BANK_SOURCES:
            report.errors.append(
                f"record {number}: source must be one of {', '.join(REASONING_BANK_SOURCES)} "
                f"(a reasoning-bank record), got {record.get('source')!r}"
            )
            continue
        try:
            tags = normalize_tags(record.get("tags") or [])
        except ValueError as exc:
            report.errors.append(f"record {number}: {exc}")
            continue
        note = _library_note(record) if library else ""
        clean.append((number, {**{name: value.strip() for name, value in values.items()}, "tags": tags, "note": note}))
    if report.errors:
        return report
    existing = set(
        MemoryItem.objects.filter(bank=bank).exclude(status=ItemStatus.SUPERSEDED).values_list("title", "content")
    )
    texts = [
        item_embedding_text(title=v["title"], description=v["description"], content=v["content"]) for _n, v in clean
    ]
    with embeddings_prefetched(texts), transaction.atomic():  # one model call for the whole file
        for number, values in clean:
            key = (values["title"], values["content"])
            if key in existing:
                report.duplicates.append(number)
                continue
            existing.add(key)
            item = memory_item_create(bank=bank, author=author, origin=ItemOrigin.IMPORT, **values)
            if getattr(item, "supported_by", None) is not None:
                report.seen_again.append(number)
            else:
                report.created.append(item)
    return report
