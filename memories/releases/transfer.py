"""Promotion between instances: a release exported by one bank (the items
export's JSON Lines after a release header) becomes the next release of
another bank, so a bank can move from a staging instance to production.

Everything that can refuse a file is checked before anything is written
(``release_import_check``: size, text, JSON, nesting, header, items, who may
import, risk findings), so the request that hands the file over answers the
refusal itself; a worker then writes it (memories.releases.imports)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from accounts.models import Bank
from memories.items.models import (
    CONTENT_MAX,
    DESCRIPTION_MAX,
    TITLE_MAX,
    ItemOrigin,
    ItemStatus,
    MemoryItem,
    MemoryItemVersion,
    normalize_tags,
)
from memories.items.services import memory_item_create
from memories.releases.labels import releasing_locked, serving_sync
from memories.releases.models import NOTE_MAX, EvaluationGate, PublishMode, ReleaseMember, ReleaseSource
from memories.releases.publishing import ReleaseOutcome, release_write
from memories.releases.selectors import RELEASE_FORMAT
from memories.review.decisions import memory_item_archive
from memories.review.policy import decision_alone_check
from memories.trust.actions.services import rows_unapproved_actions
from memories.trust.rules import scan_text
from memories.trust.rules.findings import Kind
from reasoningbank_site.analyze import analyze_after_bulk_write
from reasoningbank_site.errors import Invalid, RisksNeedConfirmation, TooLarge
from reasoningbank_site.text import counted, json_depth, scrub_text

MAX_IMPORT_ITEMS = 5000
RECORD_MAX_DEPTH = 32  # an item line is an object of strings, tags and metadata: far less deep
RISKS_LISTED = 10  # items named in the refusal's message (its details list them all)


def release_import_limit_text() -> str:
    """The release import's size limit in words ("20 MB")."""
    limit = settings.RB_RELEASE_IMPORT_MAX_BYTES
    return f"{limit // (1024 * 1024)} MB" if limit % (1024 * 1024) == 0 else f"{limit:,} bytes"


def release_import_too_large(size: int) -> TooLarge:
    """The refusal of a release file of ``size`` bytes, naming the route's limit and its setting."""
    return TooLarge(
        f"A release import is at most {release_import_limit_text()} (RB_RELEASE_IMPORT_MAX_BYTES); "
        f"this file is {size:,} bytes. Export fewer items per release, or raise the limit."
    )


def parse_release_lines(body: bytes) -> list:
    """JSON Lines ``body`` as records (lines are split on ``\\n`` only, so an item's
    text may hold any other line separator). Raises TooLarge over
    RB_RELEASE_IMPORT_MAX_BYTES; Invalid naming the first bad line: not UTF-8,
    not JSON, nested deeper than RECORD_MAX_DEPTH, or holding a NUL character or
    a lone surrogate (legal JSON escapes that no database text can store)."""
    if len(body) > settings.RB_RELEASE_IMPORT_MAX_BYTES:
        raise release_import_too_large(len(body))
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Invalid("The release file is not UTF-8 text.") from None
    records = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if "\x00" in line:
            raise Invalid(f"line {number}: holds a NUL character; a release file is text without NUL.")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise Invalid(f"line {number}: not JSON ({exc.msg}).") from None
        except RecursionError:
            record = None
        if record is None or json_depth(record, RECORD_MAX_DEPTH) > RECORD_MAX_DEPTH:
            raise Invalid(f"line {number}: nested too deeply (at most {RECORD_MAX_DEPTH} levels).")
        if scrub_text(record) is not record:
            raise Invalid(
                f"line {number}: holds a NUL character (\\u0000) or a lone surrogate (\\ud800–\\udfff), "
                "which cannot be stored."
            )
        records.append(record)
    return records


@dataclass(frozen=True)
class ReleaseFile:
    """A checked release file: its header and its item lines (``line``: the 1-based line number)."""

    header: dict
    rows: list[dict]


def _header(records: list) -> dict:
    if not records or not isinstance(records[0], dict) or not isinstance(records[0].get("release"), dict):
        raise Invalid(
            'The first line must be the release header: {"release": {"format": "' + RELEASE_FORMAT + '", …}}.'
        )
    header = records[0]["release"]
    if header.get("format") != RELEASE_FORMAT:
        raise Invalid(f"release.format: {RELEASE_FORMAT!r} expected (got {header.get('format')!r}).")
    return header


def _row(line: int, record) -> dict:
    if not isinstance(record, dict) or not all(
        isinstance(record.get(f), str) for f in ("title", "description", "content")
    ):
        raise Invalid(f"line {line}: an item needs title, description and content strings.")
    row = {name: record[name].strip() for name in ("title", "description", "content")}
    if not row["title"]:
        raise Invalid(f"line {line}: a memory item needs a title.")
    for name, limit in (("title", TITLE_MAX), ("description", DESCRIPTION_MAX), ("content", CONTENT_MAX)):
        if len(row[name]) > limit:
            raise Invalid(f"line {line}: a {name} is at most {limit} characters (got {len(row[name])}).")
    try:
        row["tags"] = normalize_tags(record.get("tags") or [])
    except ValueError as exc:
        raise Invalid(f"line {line}: tags: {exc}.") from None
    return {"line": line, **row}


def release_file_check(records: list) -> ReleaseFile:
    """``records`` (parse_release_lines) as a release file. Raises Invalid naming the first bad line."""
    header = _header(records)
    if len(records) - 1 > MAX_IMPORT_ITEMS:
        raise Invalid(f"At most {MAX_IMPORT_ITEMS} items per release import (got {len(records) - 1}).")
    return ReleaseFile(header, [_row(line, record) for line, record in enumerate(records[1:], start=2)])


def _key(title: str, description: str, content: str) -> tuple[str, str, str]:
    return (title.strip(), description.strip(), content.strip())


def release_import_risks(*, bank: Bank, rows: list[dict]) -> list[dict]:
    """The risk findings of the items ``rows`` would create (those ``bank`` does not hold approved
    already): per item, its line, title and findings (kind, excerpt). An action no item ``bank`` approves
    recommends is one (``unapproved_action``): another bank's approval is not this bank's."""
    held = set(
        MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED).values_list("title", "description", "content")
    )
    rows = [row for row in rows if _key(row["title"], row["description"], row["content"]) not in held]
    found, scanned = [], {}  # a text repeated across items (a shared description) is scanned once
    for row, actions in zip(rows, rows_unapproved_actions(bank=bank, rows=rows), strict=True):
        risks, seen = [], set()
        for field in ("title", "description", "content"):
            text = row[field]
            if text not in scanned:
                scanned[text] = scan_text(text)
            for finding in scanned[text]:
                if (finding.kind, finding.excerpt) not in seen:
                    seen.add((finding.kind, finding.excerpt))
                    risks.append({"kind": finding.kind, "excerpt": finding.excerpt})
        for a in actions:
            if (Kind.UNAPPROVED_ACTION, a.excerpt) not in seen:
                seen.add((Kind.UNAPPROVED_ACTION, a.excerpt))
                risks.append({"kind": Kind.UNAPPROVED_ACTION, "excerpt": a.excerpt})
        if risks:
            found.append({"line": row["line"], "title": row["title"], "risks": risks})
    return found


def release_import_check(
    *, bank: Bank, records: list, actor=None, token=None, confirm_risks: bool = False
) -> ReleaseFile:
    """Everything that can refuse importing ``records`` into ``bank``, before anything is written. Raises
    Forbidden when the bank's review policy needs several decisions per item and the importer does not
    decide alone (an import approves every item in it: owners and admins only, never a token); Invalid
    naming the first bad line; RisksNeedConfirmation (code ``risks_need_confirmation``, the items and
    their findings in ``details["items"]``) when items to create have risk findings, unless
    ``confirm_risks``."""
    decision_alone_check(bank=bank, user=None if token is not None else actor, doing="import a release")
    checked = release_file_check(records)
    if confirm_risks:
        return checked
    risky = release_import_risks(bank=bank, rows=checked.rows)
    if risky:
        named = "; ".join(
            f"line {r['line']} “{r['title'][:80]}” ({', '.join(sorted({f['kind'].replace('_', ' ') for f in r['risks']}))})"
            for r in risky[:RISKS_LISTED]
        )
        more = f"; and {counted(len(risky) - RISKS_LISTED, 'more item')}" if len(risky) > RISKS_LISTED else ""
        raise RisksNeedConfirmation(
            f"{counted(len(risky), 'item')} of this release {'has' if len(risky) == 1 else 'have'} risk findings: "
            f"{named}{more}. Read them, then import again confirming them (confirm_risks): "
            "you are recorded as having confirmed them.",
            details={"items": risky},
        )
    return checked


@dataclass(frozen=True)
class ImportCounts:
    created: int
    kept: int
    archived: int


@transaction.atomic
def release_import(
    *, bank: Bank, records: list, actor=None, token=None, confirm_risks: bool = False
) -> tuple[ReleaseOutcome, ImportCounts]:
    """Make release ``records`` (a release export: its header, then its
    items) the next release of ``bank`` and its production: an item with the
    same title, description and content as an approved item of ``bank``
    keeps that item, the others are created approved (origin import, tags
    kept; their risk findings confirmed by ``actor`` or ``token``), and
    approved items of ``bank`` not in the release are archived (never
    deleted). One release is published whatever the bank's mode (audited,
    with ``actor`` or ``token``); under an evaluation gate it is written as a
    candidate, not production. An import equal to what the bank holds is a
    no-op. Raises what release_import_check raises; nothing is written then."""
    checked = release_import_check(bank=bank, records=records, actor=actor, token=token, confirm_risks=confirm_risks)
    header = checked.header
    releasing = releasing_locked(bank=bank)
    mode = releasing.mode
    releasing.mode = PublishMode.MANUAL  # the changes below publish once, at the end
    releasing.save(update_fields=["mode", "updated_at"])
    existing = {
        _key(i.title, i.description, i.content): i
        for i in MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED).defer("embedding")
    }
    keep: set[int] = set()
    created = 0
    source = f"release {header.get('number')} of {header.get('bank', 'another bank')}"[:200]
    for row in checked.rows:
        found = existing.get(_key(row["title"], row["description"], row["content"]))
        if found is not None:
            keep.add(found.pk)
            continue
        item = memory_item_create(
            bank=bank,
            title=row["title"],
            description=row["description"],
            content=row["content"],
            tags=row["tags"],
            status=ItemStatus.APPROVED,
            origin=ItemOrigin.IMPORT,
            author=actor,
            token=token,
            note=source,
            consolidate=False,  # the release's own text: not a proposal for the near-duplicate check
        )
        created += 1
        existing[_key(item.title, item.description, item.content)] = item
        keep.add(item.pk)
    archived = 0
    for item in existing.values():
        if item.pk not in keep and item.status == ItemStatus.APPROVED:
            memory_item_archive(item=item, author=actor, token=token)
            archived += 1
    note = f"Imported release {header.get('number')} of {header.get('bank', 'another bank')}"
    if header.get("note"):
        note += f": {header['note']}"
    releasing.refresh_from_db(fields=["latest"])
    release = release_write(
        releasing=releasing, source=ReleaseSource.IMPORTED, note=note[:NOTE_MAX], actor=actor, token=token
    )
    releasing.mode = mode
    fields = ["mode", "updated_at"]
    candidate = releasing.evaluation_gate != EvaluationGate.OFF
    if release is not None and not candidate:
        releasing.production = release
        fields.append("production")
    releasing.save(update_fields=fields)
    serving_sync(releasing)
    counts = ImportCounts(created=created, kept=len(keep) - created, archived=archived)
    analyze_after_bulk_write([MemoryItem, MemoryItemVersion], rows=created)  # after commit, when it is a bulk
    analyze_after_bulk_write([ReleaseMember], rows=len(keep))
    if release is None:
        return ReleaseOutcome(
            None, "Nothing to import: the bank already holds exactly this release.", noop=True
        ), counts
    if candidate:
        message = (
            f"Imported as release {release.number}, a candidate: run an evaluation of it before it reaches agents."
        )
        return ReleaseOutcome(release, message, candidate=True), counts
    return ReleaseOutcome(release, f"Imported as release {release.number}, now production."), counts
