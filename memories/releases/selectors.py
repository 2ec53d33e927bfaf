"""Reads of a bank's releases: its labels (what retrieval serves), the draft
(what the next release would hold), a release's members, and the diff of two
releases with word diffs of the changed items."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Now

from accounts.audit.diff import word_diff
from accounts.models import Bank
from memories.items.export import EXPORT_FIELDS
from memories.items.models import ItemStatus, MemoryItem, MemoryItemVersion
from memories.releases.models import BankReleasing, Release, ReleaseMember
from memories.serving import (
    DIFF_FIELDS,
    RELEASED_TEXT,
    latest_version_subquery,
    release_item_exists,
    release_member_q,
    release_version_subquery,
    servable_q,
)
from reasoningbank_site.errors import Invalid, NotFound
from reasoningbank_site.keyset import keyset_chunks
from reasoningbank_site.values import ascii_number


def bank_releasing(*, bank: Bank) -> BankReleasing:
    """``bank``'s publishing mode and labels: its row, else an unsaved one with the defaults (reading never writes)."""
    row = BankReleasing.objects.filter(bank_id=bank.pk).select_related("production", "canary").first()
    return row if row is not None else BankReleasing(bank=bank)


def release_members(*, release: Release) -> QuerySet:
    """The ReleaseMember rows of ``release``."""
    return ReleaseMember.objects.filter(release_member_q(release.number), bank_id=release.bank_id)


def release_versions(*, release: Release) -> dict[int, int]:
    """item pk → version number, for every item of ``release``."""
    return dict(release_members(release=release).values_list("item_id", "version"))


def draft_versions(*, bank: Bank, item_ids=None) -> dict[int, int]:
    """item pk → latest version number of what the next release of ``bank``
    would hold: its approved items that may be served (not suspended, not
    past their validity), all of them or those of ``item_ids``."""
    qs = MemoryItem.objects.filter(servable_q(), bank_id=bank.pk, status=ItemStatus.APPROVED)
    if item_ids is not None:
        qs = qs.filter(pk__in=item_ids)
    return dict(qs.annotate(v=latest_version_subquery()).values_list("pk", "v"))


def open_versions(*, bank: Bank, item_ids=None) -> dict[int, int]:
    """item pk → version of the bank's newest release (its open membership rows)."""
    qs = ReleaseMember.objects.filter(bank_id=bank.pk, removed_in__isnull=True)
    if item_ids is not None:
        qs = qs.filter(item_id__in=item_ids)
    return dict(qs.values_list("item_id", "version"))


def release_get(*, bank: Bank, number: int) -> Release:
    """Release ``number`` of ``bank``. Raises NotFound."""
    release = Release.objects.filter(bank_id=bank.pk, number=number).select_related("created_by").first()
    if release is None:
        raise NotFound(f"Release {number} does not exist in this bank.")
    return release


def release_lookup(*, bank: Bank, ref) -> Release:
    """Release ``ref`` of ``bank``: its number (ASCII digits) or its public id.
    Raises Invalid for anything else, NotFound for a release that does not
    exist (a number too long to be one included) or is another bank's."""
    text = str(ref).strip()
    number = ascii_number(text)
    if number is not None:
        return release_get(bank=bank, number=number)
    if text.isascii() and text.isdigit():
        raise NotFound(f"Release {text[:40]} does not exist in this bank.")
    try:
        public_id = uuid.UUID(text)
    except ValueError:
        raise Invalid(f"{text[:40]!r} is not a release: give a release number (digits 0-9) or a release id.") from None
    release = Release.objects.filter(bank_id=bank.pk, public_id=public_id).select_related("created_by").first()
    if release is None:
        raise NotFound(f"Release {public_id} does not exist in this bank.")
    return release


def releases_list(*, bank: Bank, limit: int = 200) -> list[Release]:
    return list(Release.objects.filter(bank_id=bank.pk).select_related("created_by").order_by("-number")[:limit])


@dataclass
class ItemChange:
    public_id: str
    title: str
    old_version: int | None = None
    new_version: int | None = None
    fields: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)


@dataclass
class ReleaseDiff:
    added: list[ItemChange] = field(default_factory=list)
    changed: list[ItemChange] = field(default_factory=list)
    removed: list[ItemChange] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def as_dict(self) -> dict:
        def one(c: ItemChange) -> dict:
            out = {"id": c.public_id, "title": c.title, "old_version": c.old_version, "new_version": c.new_version}
            if c.fields:
                out["fields"] = {name: [list(run) for run in runs] for name, runs in c.fields}
            return out

        return {
            "added": [one(c) for c in self.added],
            "changed": [one(c) for c in self.changed],
            "removed": [one(c) for c in self.removed],
        }


def versions_text_changed(pairs: dict[int, tuple[int, int]]) -> list[int]:
    """The items of ``pairs`` (item pk → (old version, new version)) whose
    text or tags differ between the two versions: a new version that only
    recorded evidence or a status round trip is not a change of what is served.
    One query, none for no pairs."""
    if not pairs:
        return []
    wanted = Q(pk__in=[])
    for pk, numbers in pairs.items():
        wanted |= Q(item_id=pk, number__in=numbers)
    texts = {
        (v["item_id"], v["number"]): tuple(v[f] for f in RELEASED_TEXT)
        for v in MemoryItemVersion.objects.filter(wanted).values("item_id", "number", *RELEASED_TEXT)
    }
    return [pk for pk, (old, new) in pairs.items() if texts.get((pk, old)) != texts.get((pk, new))]


def versions_diff(old: dict[int, int], new: dict[int, int]) -> ReleaseDiff:
    """The diff of two snapshots (item pk → version): items added, changed
    (another version, with word diffs of title, description and content) and
    removed. Three queries whatever the size."""
    added = [pk for pk in new if pk not in old]
    removed = [pk for pk in old if pk not in new]
    changed = versions_text_changed({pk: (old[pk], new[pk]) for pk in new if pk in old and old[pk] != new[pk]})
    items = {
        row["pk"]: row
        for row in MemoryItem.objects.filter(pk__in=[*added, *removed, *changed]).values("pk", "public_id", "title")
    }
    wanted = Q(pk__in=[])
    for pk in changed:
        wanted |= Q(item_id=pk, number__in=[old[pk], new[pk]])
    texts = {
        (v["item_id"], v["number"]): v
        for v in MemoryItemVersion.objects.filter(wanted).values("item_id", "number", *DIFF_FIELDS)
    }
    diff = ReleaseDiff()

    def change(pk: int) -> ItemChange:
        row = items.get(pk, {"public_id": "", "title": ""})
        return ItemChange(public_id=str(row["public_id"]), title=row["title"])

    for pk in added:
        diff.added.append(ItemChange(**{**change(pk).__dict__, "new_version": new[pk]}))
    for pk in removed:
        diff.removed.append(ItemChange(**{**change(pk).__dict__, "old_version": old[pk]}))
    for pk in changed:
        entry = change(pk)
        entry.old_version, entry.new_version = old[pk], new[pk]
        before, after = texts.get((pk, old[pk])), texts.get((pk, new[pk]))
        if before and after:
            entry.fields = [(f, word_diff(before[f], after[f])) for f in DIFF_FIELDS if before[f] != after[f]]
        diff.changed.append(entry)
    for part in (diff.added, diff.changed, diff.removed):
        part.sort(key=lambda c: c.title.lower())
    return diff


def release_diff(*, old: Release | None, new: Release) -> ReleaseDiff:
    """What changed from ``old`` (None: an empty bank) to ``new``."""
    return versions_diff(release_versions(release=old) if old else {}, release_versions(release=new))


def release_previous(*, release: Release) -> Release | None:
    return Release.objects.filter(bank_id=release.bank_id, number__lt=release.number).order_by("-number").first()


# A change whose transaction committed after a release read the draft is stamped before that release:
# the items changed this long before the release are read again, so it is never missed.
DRAFT_SLACK = timedelta(hours=1)


def draft_changed_items(*, bank: Bank) -> list[int] | None:
    """The items of ``bank`` in which the draft may differ from the newest
    release: those changed (``updated_at``, bumped by every status, text, tag,
    suspension and validity change) or whose validity ran out since the newest
    release written from the whole draft, less ``DRAFT_SLACK``. Every other
    item is as that release read it, and automatic releases since then touched
    only changed items. Two index range reads, whatever the bank's size. None
    (every item) for a bank without such a release."""
    anchor = (
        Release.objects.filter(bank_id=bank.pk, whole_draft=True)
        .order_by("-number")
        .values_list("created_at", flat=True)
        .first()
    )
    if anchor is None:
        return None
    return list(items_changed_since(bank_id=bank.pk, since=anchor - DRAFT_SLACK).values_list("pk", flat=True))


def items_changed_since(*, bank_id: int, since) -> QuerySet:
    """The items of the bank changed, or whose validity ran out, since ``since``."""
    changed = Q(updated_at__gte=since) | Q(valid_until__gte=since, valid_until__lte=Now())
    return MemoryItem.objects.filter(changed, bank_id=bank_id)


def draft_diff(*, bank: Bank) -> ReleaseDiff:
    """What publishing now would change, against the bank's newest release:
    read from the items changed since it (``draft_changed_items``), not the
    whole approved set."""
    scope = draft_changed_items(bank=bank)
    return versions_diff(open_versions(bank=bank, item_ids=scope), draft_versions(bank=bank, item_ids=scope))


RELEASE_FORMAT = "reasoningbank.release/1"
CHUNK = 500


def release_export(*, release: Release) -> Iterator[dict]:
    """``release`` as the items export's records (memory_items_export's
    fields, each item with its text and tags as released), after one header
    record ``{"release": {...}}`` saying which release of which bank it is."""
    bank = release.bank
    yield {
        "release": {
            "format": RELEASE_FORMAT,
            "number": release.number,
            "note": release.note,
            "items": release.item_count,
            "bank": f"{bank.team.slug}/{bank.slug}",
            "created_at": release.created_at.isoformat(),
        }
    }
    # Keyset chunks of the members in the items export's order (each chunk an index range read of the bank's
    # items, each probed for its membership), each with its released texts: the first item does not wait for
    # the whole release to be read and held in memory.
    number = release.number
    items = (
        MemoryItem.objects.filter(release_item_exists(number), bank_id=bank.pk)
        .annotate(release_version=release_version_subquery(number))
        .only("pk", "public_id", *EXPORT_FIELDS)
    )
    for chunk in keyset_chunks(items, order=("created_at", "id"), chunk=CHUNK):
        yield from _export_rows(release, chunk)


def _export_rows(release: Release, items: list[MemoryItem]) -> Iterator[dict]:
    """``items`` (members of ``release``, ``release_version`` annotated) as export records, with the title,
    description, content and tags of their version in the release."""
    released = ReleaseMember.objects.filter(
        release_member_q(release.number), item_id=OuterRef("item_id"), version=OuterRef("number")
    )
    texts = MemoryItemVersion.objects.filter(Exists(released), item_id__in=[item.pk for item in items]).order_by()
    versions = {v["item_id"]: v for v in texts.values("item_id", *RELEASED_TEXT)}
    for item in items:
        row = {"id": str(item.public_id)}
        for name in EXPORT_FIELDS:
            value = getattr(item, name)
            row[name] = value.isoformat() if hasattr(value, "isoformat") else value
        text = versions.get(item.pk)
        if text is not None:
            row.update({f: text[f] for f in RELEASED_TEXT})
        row["status"] = ItemStatus.APPROVED
        row["version"] = item.release_version
        yield row
