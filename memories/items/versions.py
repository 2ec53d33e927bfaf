"""The item history every write of an item passes through: the row lock, and
the version + audit event appended after each change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Model

from accounts.audit.actions import AuditAction, item_version_audit_action
from accounts.audit.services import audit_event
from accounts.models import ApiToken
from memories.items.models import MemoryItem, MemoryItemVersion
from memories.releases.publishing import release_may_change, releases_items_changed

_AUDITED_FIELDS = ("title", "description", "content", "status", "tags")


def item_lock(item: MemoryItem) -> None:
    """Re-read ``item`` under a row lock (the caller holds a transaction), so
    two reviewers cannot both change it."""
    item.refresh_from_db(from_queryset=MemoryItem.objects.select_for_update())


def item_version_record(
    *, item: MemoryItem, action: str, author=None, note: str = "", token: ApiToken | None = None
) -> MemoryItemVersion:
    """Append the item's next version and the matching audit event (before =
    the previous version, after = now): every item change passes here, so the
    history and the audit log cannot disagree. ``token``: the API token that
    acted (the review API), recorded as the actor of both."""
    (version,) = items_version_record(
        changes=[VersionChange(item=item, action=action, author=author, note=note, token=token)]
    )
    return version


@dataclass(frozen=True)
class VersionChange:
    """One change to record with ``items_version_record``."""

    item: MemoryItem
    action: str
    author: object = None
    note: str = ""
    token: ApiToken | None = None


def items_version_record(
    *,
    changes: Sequence[VersionChange],
    insert_with: Sequence[Model] = (),
) -> list[MemoryItemVersion]:
    """``item_version_record`` for several changes at once, in order, in two
    to four queries whatever their number (the items' latest versions, then
    one insert each of ``insert_with``, the versions and the audit events). An item may appear more than once:
    its versions follow each other (each one's audit ``before`` is the one
    recorded just before it). The latest versions are read here, in a
    statement of their own after the caller took the items' row locks: read
    in the locking statement, they would come from its snapshot, taken before
    a concurrent writer it waited for committed its version (a duplicate
    number). ``insert_with``: unsaved rows
    of one other model, referring to no version or event, inserted with them
    (a change's supports)."""
    if not changes:
        return []
    latest = {v.item_id: v for v in _latest_versions({c.item.pk for c in changes})}
    versions, events, served_changes = [], [], []
    for change in changes:
        item, previous = change.item, latest.get(change.item.pk)
        version = MemoryItemVersion(
            item=item,
            number=(previous.number if previous else 0) + 1,
            title=item.title,
            description=item.description,
            content=item.content,
            status=item.status,
            tags=list(item.tags),
            action=change.action,
            note=change.note,
            author=change.author,
            actor_token=change.token,
        )
        latest[item.pk] = version
        versions.append(version)
        if release_may_change(previous=previous, version=version):
            served_changes.append((item, previous.status if previous else None))
        before = {f: getattr(previous, f) for f in _AUDITED_FIELDS} if previous else None
        after = {f: getattr(version, f) for f in _AUDITED_FIELDS}
        if change.note:
            after["note"] = change.note
        events.append(
            audit_event(
                action=item_version_audit_action(change.action),
                bank=item.bank,
                user=change.author,
                token=change.token,
                obj=item,
                before=before,
                after=after,
            )
        )
    _insert(insert_with, versions, events)
    releases_items_changed(changes=served_changes)
    return versions


def _latest_versions(item_ids):
    """The latest version of each of ``item_ids``."""
    return (
        MemoryItemVersion.objects.filter(item_id__in=item_ids)
        .order_by("item_id", "-number")
        .distinct("item_id")
        .only("item_id", "number", *_AUDITED_FIELDS)
    )


def _insert(*groups: Sequence[Model]) -> None:
    """One ``bulk_create`` per non-empty group of one model's unsaved rows,
    together: in the caller's transaction, or in one of their own."""
    with transaction.atomic(savepoint=False):
        for rows in groups:
            if rows:
                type(rows[0]).objects.bulk_create(rows)


def items_created_record(*, items: list[MemoryItem], note: str = "") -> list[MemoryItemVersion]:
    """``item_version_record(action="created")`` for items just inserted (no
    version yet, no author), in two inserts whatever their number."""
    versions = [
        MemoryItemVersion(
            item=item,
            number=1,
            title=item.title,
            description=item.description,
            content=item.content,
            status=item.status,
            tags=list(item.tags),
            action="created",
            note=note,
        )
        for item in items
    ]
    events = []
    for item, version in zip(items, versions, strict=True):
        after = {f: getattr(version, f) for f in _AUDITED_FIELDS}
        if note:
            after["note"] = note
        events.append(audit_event(action=AuditAction.MEMORY_ITEM_CREATE, bank=item.bank, obj=item, after=after))
    _insert(versions, events)
    releases_items_changed(changes=[(item, None) for item in items])
    return versions
