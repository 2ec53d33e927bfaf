"""The item history every write of an item passes through: the row lock, and
the version + audit event appended after each change."""

from __future__ import annotations

from accounts.models import ApiToken
from accounts.services.audit import audit_event, audit_record, audit_record_many
from memories.models import MemoryItem, MemoryItemVersion

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
    previous = item.versions.order_by("-number").first()
    version = MemoryItemVersion.objects.create(
        item=item,
        number=(previous.number if previous else 0) + 1,
        title=item.title,
        description=item.description,
        content=item.content,
        status=item.status,
        tags=list(item.tags),
        action=action,
        note=note,
        author=author,
        actor_token=token,
    )
    before = {f: getattr(previous, f) for f in _AUDITED_FIELDS} if previous else None
    after = {f: getattr(version, f) for f in _AUDITED_FIELDS}
    if note:
        after["note"] = note
    audit_record(
        action=f"memory_item.{action}", bank=item.bank, user=author, token=token, obj=item, before=before, after=after
    )
    return version


def items_created_record(*, items: list[MemoryItem], note: str = "") -> list[MemoryItemVersion]:
    """``item_version_record(action="created")`` for items just inserted (no
    version yet, no author), in two inserts whatever their number."""
    versions = MemoryItemVersion.objects.bulk_create(
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
    )
    events = []
    for item, version in zip(items, versions, strict=True):
        after = {f: getattr(version, f) for f in _AUDITED_FIELDS}
        if note:
            after["note"] = note
        events.append(audit_event(action="memory_item.created", bank=item.bank, obj=item, after=after))
    audit_record_many(events)
    return versions
