"""Several reviewers on one queue: the version check every decision
can carry (optimistic concurrency), who has an item open (presence), and the
slices of the queue given to reviewers (assignments)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank, Membership, Role
from memories.items.models import ItemOrigin, MemoryItem, MemoryItemVersion, normalize_tags
from memories.items.versions import item_lock
from memories.review.models import ReviewAssignment, ReviewPresence
from reasoningbank_site.errors import Invalid, StaleVersion
from reasoningbank_site.text import ago

ASSIGNMENT_ITEMS_MAX = 500
VERDICTS = ("success", "failure")

_DONE = {
    "approved": "Approved",
    "rejected": "Rejected",
    "archived": "Archived",
    "superseded": "Superseded",
    "edited": "Edited",
    "flagged": "Flagged for review",
    "kept-both": "Kept both",
    "created": "Created",
}


def item_current_version(item: MemoryItem) -> int:
    """The number of ``item``'s latest version: every change of its text or
    status appends one (memories.items.versions), so it is the item's
    version counter."""
    return item.versions.order_by("-number").values_list("number", flat=True).first() or 0


def version_describe(version: MemoryItemVersion, *, now=None) -> str:
    """One change in words: "Rejected by alice 12 s ago: too vague"."""
    text = f"{_DONE.get(version.action, version.action.capitalize())} by {version.actor_label} {ago(version.created_at, now=now, seconds=True)}"
    return f"{text}: {version.note}" if version.note else text


def item_version_check(*, item: MemoryItem, seen_version: int | None) -> None:
    """Refuse a decision taken on an old version of ``item``. ``seen_version``
    is the version number the reviewer's page showed; None (an old form, an
    API call without one) checks nothing. Locks the item's row first (the
    caller holds a transaction): every version is appended under that lock,
    so no change can slip in between this check and the caller's write.
    Raises StaleVersion naming who changed it, how, and when."""
    if seen_version is None:
        return
    item_lock(item)
    current = item_current_version(item)
    if current == seen_version:
        return
    newer = list(
        item.versions.filter(number__gt=seen_version).select_related("author", "actor_token").order_by("-number")[:5]
        if seen_version < current
        else item.versions.select_related("author", "actor_token").order_by("-number")[:1]
    )
    changes = [version_describe(v) for v in newer]
    latest = changes[0].rstrip(".") if changes else "It was changed"
    earlier = current - seen_version - 1
    more = f" (and {earlier} earlier change{'s' if earlier > 1 else ''})" if earlier > 0 else ""
    raise StaleVersion(
        f"This item changed while you were looking at it. {latest}{more}. It is now {item.status}; "
        "your decision was not applied — decide again on what it is now.",
        changes=changes,
        current_version=current,
    )


# --- presence ----------------------------------------------------------------------------


def review_presence_touch(*, item: MemoryItem, user) -> None:
    """``user`` has ``item`` open in the focus view now (one upsert; not
    audited: a heartbeat changes nothing anyone decided)."""
    ReviewPresence.objects.bulk_create(
        [ReviewPresence(item=item, user=user, last_seen=timezone.now())],
        update_conflicts=True,
        unique_fields=["item", "user"],
        update_fields=["last_seen"],
    )


# --- assignments -------------------------------------------------------------------------


def _assignable(bank: Bank, reviewer) -> bool:
    membership = Membership.objects.filter(team_id=bank.team_id, user=reviewer).first()
    return membership is not None and membership.has_role(Role.REVIEWER)


@transaction.atomic
def review_assignment_create(
    *,
    bank: Bank,
    reviewer,
    author,
    origin: str = "",
    verdict: str = "",
    agent: str = "",
    tag: str = "",
    items=(),
    note: str = "",
) -> ReviewAssignment:
    """Give ``reviewer`` a slice of ``bank``'s queue: the proposed items
    matching every criterion given, plus ``items`` (MemoryItems of the bank);
    neither: the whole queue. Audited. Raises Invalid for a reviewer who is not
    a reviewer (or above) of the bank's team, an unknown origin or verdict, a
    bad tag, items of another bank or more than ASSIGNMENT_ITEMS_MAX items."""
    if reviewer is None or not _assignable(bank, reviewer):
        raise Invalid("Assign the slice to a reviewer (or admin, owner) of this bank's team.")
    if origin and origin not in ItemOrigin.values:
        raise Invalid(f"origin must be one of {ItemOrigin.values}, got {origin!r}.")
    if verdict and verdict not in VERDICTS:
        raise Invalid(f"verdict must be one of {list(VERDICTS)}, got {verdict!r}.")
    try:
        tags = normalize_tags(tag or "")
    except ValueError as exc:
        raise Invalid(f"Tag: {exc}.") from None
    if len(tags) > 1:
        raise Invalid("A slice has at most one tag.")
    items = list(items)
    if len(items) > ASSIGNMENT_ITEMS_MAX:
        raise Invalid(f"At most {ASSIGNMENT_ITEMS_MAX} listed items (got {len(items)}).")
    if any(i.bank_id != bank.pk for i in items):
        raise Invalid("Every listed item must belong to this bank.")
    assignment = ReviewAssignment.objects.create(
        bank=bank,
        reviewer=reviewer,
        origin=origin,
        verdict=verdict,
        agent=(agent or "").strip()[:200],
        tag=tags[0] if tags else "",
        note=(note or "").strip()[:200],
        created_by=author,
    )
    if items:
        assignment.items.set(items)
    audit_record(
        action=AuditAction.REVIEW_ASSIGNMENT_CREATE,
        bank=bank,
        user=author,
        obj=assignment,
        after={
            "reviewer": reviewer.get_username(),
            "slice": assignment.describe(),
            "items": [str(i.public_id) for i in items],
            "note": assignment.note,
        },
    )
    return assignment


@transaction.atomic
def review_assignment_delete(*, assignment: ReviewAssignment, author) -> None:
    """Remove a slice (audited with what it was)."""
    before = {"reviewer": assignment.reviewer.get_username(), "slice": assignment.describe(), "note": assignment.note}
    audit_record(
        action=AuditAction.REVIEW_ASSIGNMENT_DELETE, bank=assignment.bank, user=author, obj=assignment, before=before
    )
    assignment.delete()
