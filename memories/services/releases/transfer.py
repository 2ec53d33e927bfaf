"""Promotion between instances: a release exported by one bank (the items
export's JSON Lines after a release header) becomes the next release of
another bank, so a bank can move from a staging instance to production."""

from __future__ import annotations

import json

from django.db import transaction

from accounts.models import Bank
from memories.models import ItemOrigin, ItemStatus, MemoryItem, PublishMode, ReleaseSource
from memories.models.releases import NOTE_MAX
from memories.selectors.releases import RELEASE_FORMAT
from memories.services.decisions import memory_item_archive
from memories.services.items import memory_item_create
from memories.services.releases.labels import releasing_locked, serving_sync
from memories.services.releases.publishing import ReleaseOutcome, release_write
from reasoningbank_site.errors import Invalid, TooLarge

MAX_IMPORT_ITEMS = 5000
MAX_IMPORT_BYTES = 20 * 1024 * 1024


def parse_release_lines(body: bytes) -> list:
    """JSON Lines ``body`` as records. Raises Invalid naming the first bad line."""
    if len(body) > MAX_IMPORT_BYTES:
        raise TooLarge(f"A release import is at most {MAX_IMPORT_BYTES // (1024 * 1024)} MB.")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("The release file is not UTF-8 text.") from None
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise Invalid(f"line {number}: not JSON ({exc.msg}).") from None
    return records


def _header(records: list) -> dict:
    if not records or not isinstance(records[0], dict) or not isinstance(records[0].get("release"), dict):
        raise Invalid(
            'The first line must be the release header: {"release": {"format": "' + RELEASE_FORMAT + '", …}}.'
        )
    header = records[0]["release"]
    if header.get("format") != RELEASE_FORMAT:
        raise Invalid(f"release.format: {RELEASE_FORMAT!r} expected (got {header.get('format')!r}).")
    return header


def _key(title: str, description: str, content: str) -> tuple[str, str, str]:
    return (title.strip(), description.strip(), content.strip())


@transaction.atomic
def release_import(*, bank: Bank, records: list, actor=None, token=None) -> ReleaseOutcome:
    """Make release ``records`` (a release export: its header, then its
    items) the next release of ``bank`` and its production: an item with the
    same title, description and content as an approved item of ``bank``
    keeps that item, the others are created approved (origin import, tags
    kept), and approved items of ``bank`` not in the release are archived
    (never deleted). One release is published whatever the bank's mode
    (audited). An import equal to what the bank holds is a no-op. Raises
    Invalid naming the first bad record; nothing is written then."""
    header = _header(records)
    rows = records[1:]
    if len(rows) > MAX_IMPORT_ITEMS:
        raise Invalid(f"At most {MAX_IMPORT_ITEMS} items per release import (got {len(rows)}).")
    releasing = releasing_locked(bank=bank)
    mode = releasing.mode
    releasing.mode = PublishMode.MANUAL  # the changes below publish once, at the end
    releasing.save(update_fields=["mode", "updated_at"])
    existing = {
        _key(i.title, i.description, i.content): i
        for i in MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED).defer("embedding")
    }
    keep: set[int] = set()
    for line, row in enumerate(rows, start=2):
        if not isinstance(row, dict) or not all(
            isinstance(row.get(f), str) for f in ("title", "description", "content")
        ):
            raise Invalid(f"line {line}: an item needs title, description and content strings.")
        found = existing.get(_key(row["title"], row["description"], row["content"]))
        if found is not None:
            keep.add(found.pk)
            continue
        try:
            item = memory_item_create(
                bank=bank,
                title=row["title"],
                description=row["description"],
                content=row["content"],
                tags=row.get("tags") or (),
                status=ItemStatus.APPROVED,
                origin=ItemOrigin.IMPORT,
                author=actor,
                note=f"release {header.get('number')} of {header.get('bank', 'another bank')}"[:200],
            )
        except Invalid as exc:
            raise Invalid(f"line {line}: {exc}") from exc
        existing[_key(item.title, item.description, item.content)] = item
        keep.add(item.pk)
    for item in existing.values():
        if item.pk not in keep and item.status == ItemStatus.APPROVED:
            memory_item_archive(item=item, author=actor)
    note = f"Imported release {header.get('number')} of {header.get('bank', 'another bank')}"
    if header.get("note"):
        note += f": {header['note']}"
    releasing.refresh_from_db(fields=["latest"])
    release = release_write(
        releasing=releasing, source=ReleaseSource.IMPORTED, note=note[:NOTE_MAX], actor=actor, token=token
    )
    releasing.mode = mode
    fields = ["mode", "updated_at"]
    if release is not None:
        releasing.production = release
        fields.append("production")
    releasing.save(update_fields=fields)
    serving_sync(releasing)
    if release is None:
        return ReleaseOutcome(None, "Nothing to import: the bank already holds exactly this release.", noop=True)
    return ReleaseOutcome(release, f"Imported as release {release.number}, now production.")
