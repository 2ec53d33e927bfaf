"""Consolidation: a lesson distilled again, or an item merged into another,
becomes supporting evidence on the item that already holds it (a
MemoryItemSupport row, the item's ``support_count``, and a version in its
history), instead of a second item for reviewers to find and compare.

``proposals_check`` is the one near-duplicate check every new item goes
through, whoever makes it (distillation, MaTTS, by hand, approved at once,
imported): one bank's proposals are checked one after the other under a
transaction-scoped advisory lock, so two identical lessons proposed at the
same moment never both reach the queue."""

from __future__ import annotations

import copy
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from django.db import connection
from django.db.models import Case, F, PositiveIntegerField, Value, When

from accounts.models import Bank
from memories.items.corroboration import EVIDENCE_KINDS, Sources, corroboration_counts
from memories.items.experiences import Experience
from memories.items.models import ItemOrigin, ItemStatus, MemoryItem, MemoryItemSupport, SupportKind
from memories.items.near_duplicates import NEAR_DUPLICATE_LIMIT, NEAR_DUPLICATE_SIMILARITY, near_duplicates_search_many
from memories.items.versions import VersionChange, items_version_record

SUPPORTABLE_STATUSES = (ItemStatus.PROPOSED, ItemStatus.APPROVED)


def _trajectory_ids(cited_steps, experience: Experience | None) -> list[str]:
    """The cited trajectories (distinct, in order), else the experience's."""
    ids: list[str] = []
    for cite in cited_steps or ():
        if isinstance(cite, dict) and cite.get("trajectory"):
            try:
                tid = str(uuid.UUID(str(cite["trajectory"])))
            except ValueError:
                continue
            if tid not in ids:
                ids.append(tid)
    if not ids and experience is not None:
        # By relation name: this app never imports the trajectories app.
        ids = [str(p) for p in experience.trajectories.order_by("created_at").values_list("public_id", flat=True)[:5]]
    return ids


def _supports_add(entries: Sequence[tuple[MemoryItem, MemoryItemSupport, VersionChange]]) -> None:
    """Store ``(item, support, change)`` entries: every item's
    ``support_count`` and independent sources (memories.items.corroboration) in one update (an item supported
    twice grows by two),
    then the support rows, the versions and the audit events (one insert each).
    The caller holds the items' row locks."""
    grown = Counter(item.pk for item, _support, _change in entries)
    growth = Case(*(When(pk=pk, then=Value(n)) for pk, n in grown.items()), output_field=PositiveIntegerField())
    sources = Sources()  # the new evidence's runs, counted with the item's in the same statement
    for item, support, _change in entries:
        if support.kind in EVIDENCE_KINDS:
            sources.add(item.pk, experience_id=support.experience_id, trajectory_ids=support.trajectory_ids)
    counts = corroboration_counts(sources)
    MemoryItem.objects.filter(pk__in=grown).update(support_count=F("support_count") + growth, **counts)
    for item, _support, _change in entries:
        item.support_count += 1
    items_version_record(
        changes=[change for _item, _support, change in entries],
        insert_with=[support for _item, support, _change in entries],  # one insert: supports, versions, events
    )


def _support_of(
    source: MemoryItem, *, item: MemoryItem, kind: str, similarity, trajectories: dict | None = None, **extra
) -> MemoryItemSupport:
    """An unsaved MemoryItemSupport on ``item`` keeping ``source``'s text and
    provenance (a distilled proposal, or an item merged in). ``trajectories``:
    the experiences' trajectories already read, by experience id (filled in)."""
    if source.cited_steps or source.experience_id is None or trajectories is None:
        trajectory_ids = _trajectory_ids(source.cited_steps, source.experience)
    else:
        trajectory_ids = trajectories.get(source.experience_id)
        if trajectory_ids is None:
            trajectory_ids = trajectories[source.experience_id] = _trajectory_ids((), source.experience)
    return MemoryItemSupport(
        item=item,
        kind=kind,
        experience=source.experience,
        trajectory_ids=list(trajectory_ids),
        similarity=similarity,
        title=source.title,
        description=source.description,
        content=source.content,
        origin=source.origin,
        verdict_label=source.verdict_label,
        cited_steps=list(source.cited_steps or []),
        model=source.model,
        prompt_version=source.prompt_version,
        **extra,
    )


def memory_item_support_record(
    *, item_public_id: str, proposal: MemoryItem, similarity: float
) -> MemoryItemSupport | None:
    """Record the unsaved distilled ``proposal`` as supporting evidence on the
    item ``item_public_id`` (of the same bank) it duplicates: its text,
    origin, verdict, model, prompt, cited steps, experience, trajectories and
    ``similarity`` are kept; the item's ``support_count`` grows by one and its
    history gets a "supported" version naming the trajectories. Returns None
    (nothing written) when that item no longer exists or is no longer proposed
    or approved, so the caller proposes it after all. The caller holds a
    transaction."""
    (support,) = memory_items_support_record(sightings=[Sighting(proposal, item_public_id, similarity)])
    return support


class Sighting(NamedTuple):
    """A distilled proposal found again on the bank's item ``item_public_id``."""

    proposal: MemoryItem
    item_public_id: str
    similarity: float


def memory_items_support_record(
    *,
    sightings: Sequence[Sighting],
    experience_trajectory_ids: Sequence[str] | None = None,
    kind: str = SupportKind.DISTILLED,
) -> list[MemoryItemSupport | None]:
    """``memory_item_support_record`` for the proposals of one distillation (one
    bank), in order, in a constant number of queries: one SELECT … FOR UPDATE
    locks all their items in id order (two workers consolidating into the
    same items never wait on each other in a cycle), then the support rows,
    the counters, the versions and the audit events are written in one
    statement each. An item found by several proposals gets a support and a
    version for each, in order; each proposal's entry is its own copy of the
    item, with the ``support_count`` it had just after that support. None
    where that item no longer exists or is no longer proposed or approved.
    ``experience_trajectory_ids``: as for memory_items_propose (the
    proposals share one experience). ``kind`` REPEATED records each proposal
    as a repeat of a rejected or archived-as-wrong item instead (a "repeated"
    version; None where that item is no longer refused)."""
    if not sightings:
        return []
    bank = sightings[0].proposal.bank
    locked = {
        str(item.public_id): item for item in _items_locked({s.item_public_id for s in sightings}, bank_id=bank.pk)
    }
    trajectories: dict[int | None, list[str]] = {}  # the proposals share their experience: its trajectories once
    if experience_trajectory_ids is not None:
        trajectories[sightings[0].proposal.experience_id] = [str(t) for t in experience_trajectory_ids][:5]
    entries, result = [], []
    for proposal, public_id, similarity in sightings:
        item = locked.get(str(public_id))
        if item is None or not _receives(item, kind):
            result.append(None)
            continue
        item.bank = bank  # the same bank (filtered above), with its team already loaded for the audit events
        support = _support_of(proposal, item=item, kind=kind, similarity=similarity, trajectories=trajectories)
        where = ", ".join(f"trajectory {t[:8]}" for t in support.trajectory_ids) or "a trajectory"
        again = _AGAIN.get(proposal.origin, "Distilled again")
        again = f"Refused lesson {again[0].lower()}{again[1:]}" if kind == SupportKind.REPEATED else again
        note = f"{again} from {where} (similarity {similarity:.2f}): “{proposal.title}”."
        action = "repeated" if kind == SupportKind.REPEATED else "supported"
        entries.append((item, support, VersionChange(item=item, action=action, note=note)))
        result.append(support)
    if entries:
        _supports_add(entries)
        # Each support's own copy of its item, counted as it was right after that support.
        added = Counter(item.pk for item, _support, _change in entries)
        count = {item.pk: item.support_count - added[item.pk] for item, _support, _change in entries}
        for item, support, _change in entries:
            count[item.pk] += 1
            support.item = copy.copy(item)
            support.item.support_count = count[item.pk]
    return result


# How a "seen again" version names where the lesson came from again.
_AGAIN = {ItemOrigin.MANUAL: "Written again by hand", ItemOrigin.IMPORT: "Imported again"}


def _receives(item: MemoryItem, kind: str) -> bool:
    """Whether ``item`` may receive a support of ``kind``."""
    if kind == SupportKind.REPEATED:
        return item.status == ItemStatus.REJECTED or (item.status == ItemStatus.ARCHIVED and item.archived_as_wrong)
    return item.status in SUPPORTABLE_STATUSES


def memory_item_support_merged(*, into: MemoryItem, item: MemoryItem, author, similarity: float | None) -> None:
    """Keep ``item``'s text (as edited by reviewers) on ``into`` when ``item``
    is merged into it: a "merged" MemoryItemSupport row and a "merged-in"
    version on ``into``'s history naming ``item`` and ``author``. The caller
    holds ``into``'s row lock."""
    support = _support_of(
        item, item=into, kind=SupportKind.MERGED, similarity=similarity, merged_item=item, author=author
    )
    note = f"“{item.title}” ({item.public_id}) was merged into this item; its text is kept as supporting evidence."
    _supports_add([(into, support, VersionChange(item=into, action="merged-in", author=author, note=note))])


def _items_locked(public_ids, *, bank_id: int):
    """The bank's items ``public_ids``, locked (SELECT … FOR UPDATE: the caller holds a transaction)."""
    return list(
        MemoryItem.objects.select_for_update()
        .filter(bank_id=bank_id, public_id__in=public_ids)
        .defer("embedding")  # not needed here; read on access (loaded lazily) like any deferred field
        .order_by("pk")  # in id order: two workers locking the same items never wait on each other in a cycle
    )


# The first key of the advisory lock (pg_advisory_xact_lock(int, int)) that serializes a bank's
# proposals; the second is the bank's id. Another use of advisory locks takes another first key.
PROPOSALS_LOCK = 0x5242_4450  # "RBDP"


def bank_proposals_lock(*, bank: Bank) -> None:
    """Wait for, then hold until the caller's transaction ends, the bank's
    proposal lock: a statement run after it sees every item another
    proposal of the bank committed before. The caller holds a transaction."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [PROPOSALS_LOCK, bank.pk])


def proposals_check(
    *,
    bank: Bank,
    items: Sequence[MemoryItem],
    repeat_threshold: float | None = None,
    experience_trajectory_ids: Sequence[str] | None = None,
) -> list[MemoryItem | None]:
    """The one near-duplicate check of new items, run before they are stored.
    ``items``: the bank's new items, embedded and unsaved, in order. Under the
    bank's proposal lock (``bank_proposals_lock``, held to the end of the
    caller's transaction, so proposals of one bank at the same moment are
    checked one after the other, the later seeing the earlier):

    1. with ``repeat_threshold`` (the bank has refused items), an item at or
       above it to a rejected or archived-as-wrong item is recorded on that
       item as a repeat (a REPEATED support), never queued;
    2. an item whose nearest proposed or approved item is at or above
       ``bank.duplicate_threshold`` is recorded on it as "seen again"
       evidence (a DISTILLED support), instead of becoming a second item;
    3. every other item gets its ``near_duplicates`` (the up-to-3 proposed or
       approved items at or above NEAR_DUPLICATE_SIMILARITY, the items before
       it in ``items`` included, most similar first), and each proposed twin
       names it back, so both show the other before anyone decides.

    Returns, by position, the existing item that took the item (its
    ``supported_by`` set to the new MemoryItemSupport), or None where the
    caller stores the item."""
    if not items:
        return []
    bank_proposals_lock(bank=bank)
    taken: dict[int, MemoryItem] = {}
    if repeat_threshold is not None:
        taken.update(
            _record(items, bank=bank, min_similarity=repeat_threshold, trajectory_ids=experience_trajectory_ids)
        )
    rest = [n for n in range(len(items)) if n not in taken]
    found = dict(
        zip(rest, near_duplicates_search_many(bank=bank, vectors=[items[n].embedding for n in rest]), strict=True)
    )
    again = {n: found[n] for n in rest if found[n] and found[n][0]["similarity"] >= bank.duplicate_threshold}
    taken.update(_record(items, bank=bank, found=again, trajectory_ids=experience_trajectory_ids))
    kept = [n for n in rest if n not in taken]
    for position, n in enumerate(kept):
        item = items[n]
        earlier = [
            {
                "id": str(e.public_id),
                "title": e.title,
                "similarity": round(float(np.dot(item.embedding, e.embedding)), 4),
            }
            for e in (items[m] for m in kept[:position])
        ]
        candidates = found[n] + [d for d in earlier if d["similarity"] >= NEAR_DUPLICATE_SIMILARITY]
        item.near_duplicates = sorted(candidates, key=lambda d: -d["similarity"])[:NEAR_DUPLICATE_LIMIT]
    _twins_name_back([items[n] for n in kept], bank=bank)
    return [taken.get(n) for n in range(len(items))]


def _record(items, *, bank: Bank, trajectory_ids, found=None, min_similarity=None) -> dict[int, MemoryItem]:
    """Record ``items`` on the items ``found`` for them (by position), or, given
    ``min_similarity``, on the nearest refused item at or above it (as repeats);
    by position, the items (``supported_by`` set) that took them."""
    kind = SupportKind.DISTILLED
    if min_similarity is not None:
        kind = SupportKind.REPEATED
        searched = near_duplicates_search_many(
            bank=bank, vectors=[item.embedding for item in items], refused=True, min_similarity=min_similarity
        )
        found = {n: hits for n, hits in enumerate(searched) if hits}
    positions = list(found)
    supports = memory_items_support_record(
        sightings=[Sighting(items[n], found[n][0]["id"], found[n][0]["similarity"]) for n in positions],
        experience_trajectory_ids=trajectory_ids,
        kind=kind,
    )
    taken: dict[int, MemoryItem] = {}
    for n, support in zip(positions, supports, strict=True):
        if support is not None:
            support.item.supported_by = support  # tells the caller this item was consolidated
            taken[n] = support.item
    return taken


def _twins_name_back(items: Sequence[MemoryItem], *, bank: Bank) -> None:
    """Add each of ``items`` (unsaved, ``near_duplicates`` set) to the
    suggestions of the proposed items it names, most similar first, at most
    NEAR_DUPLICATE_LIMIT: the earlier twin's queue row and page show the later
    one too. One locked read and one update per twin, only where there are twins.
    (Twins within ``items`` are named by the later one only, as when they are
    proposed one after the other and returned.)"""
    named: dict[str, list[dict]] = {}
    for item in items:
        for d in item.near_duplicates:
            named.setdefault(d["id"], []).append(
                {"id": str(item.public_id), "title": item.title, "similarity": d["similarity"]}
            )
    if not named:
        return
    new = {str(item.public_id) for item in items}
    for other in _items_locked(set(named) - new, bank_id=bank.pk):
        if other.status != ItemStatus.PROPOSED:
            continue
        entries = [d for d in other.near_duplicates or [] if isinstance(d, dict)] + named[str(other.public_id)]
        other.near_duplicates = sorted(entries, key=lambda d: -float(d.get("similarity") or 0))[:NEAR_DUPLICATE_LIMIT]
        other.save(update_fields=["near_duplicates"])
