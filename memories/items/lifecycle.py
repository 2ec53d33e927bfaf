"""An item's lifecycle: the one answer to "what state is this item in, why,
and what can a reviewer do about it". Its page, the review queue's focus
view, the Memories list and the review API all read it from here.

The status machine (``transitions``) says which moves are allowed; this
module adds what follows serving (production, suspension, retirement,
validity, staleness, refusals seen again, merges) and picks the one state
that leads: a suspended item is "Suspended", never just "Approved".

``lifecycle_annotations`` reads everything a state needs in the list's own
query (no query per row); ``item_lifecycle`` is the state of one item (one
query); ``lifecycle_of`` computes it from an annotated row."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Subquery, Value

from accounts.models import Bank
from memories.items.models import ItemStatus, MemoryItem, MemoryItemSupport, SupportKind
from memories.items.transitions import item_move_allowed
from memories.learning.selectors import LifecycleState, item_expired
from memories.learning.validity import validity_label
from memories.serving import corroboration_q, release_item_exists, served_release, unconfirmed_risk_q
from memories.serving.lists import served_flag


class ItemState:
    """The state that leads on an item's page, most urgent first among those that apply."""

    PROPOSED = "proposed"
    APPROVED = "approved"  # see ItemLifecycle.in_production
    SUSPENDED = "suspended"  # approved, proposed for retirement and withheld until a reviewer decides
    RETIREMENT = "retirement"  # approved, proposed for retirement, still served
    EXPIRED = "expired"  # approved, past its validity
    STALE = "stale"  # approved, learnt under an environment since replaced
    REFUSED = "refused"  # rejected, or archived as wrong
    ARCHIVED = "archived"
    MERGED = "merged"  # superseded by a merge into another item
    SUPERSEDED = "superseded"  # replaced by another item

    values = (PROPOSED, APPROVED, SUSPENDED, RETIREMENT, EXPIRED, STALE, REFUSED, ARCHIVED, MERGED, SUPERSEDED)


# The decisions offered in each state beyond the status moves (names of memories.learning.views's actions).
_LIFECYCLE_ACTIONS = {
    ItemState.SUSPENDED: ("keep",),
    ItemState.RETIREMENT: ("keep",),
    ItemState.STALE: ("still-holds",),
    ItemState.EXPIRED: ("validity",),
    ItemState.REFUSED: ("reopen",),
}


# Status moves the status machine allows but a state does not offer: a refused lesson goes back through the
# queue (reopen), where the bank's review policy applies again, never straight to serving from its page.
_WITHHELD_ACTIONS = {
    ItemState.REFUSED: frozenset({"approve"}),
}


@dataclass(frozen=True)
class LinkedItem:
    public_id: object
    title: str


@dataclass(frozen=True)
class ItemLifecycle:
    """One item's state: ``state`` (ItemState) and its ``label``, ``reason``
    (the why, in a sentence or the reviewer's words), ``actions`` (the
    decisions open to a reviewer, leading one first), ``in_production``
    (whether production serves it now), ``not_served`` (why an approved
    item is not served, "" when it is), ``flags`` (every LifecycleState
    the item is in, for badges and queue filters), ``repeats`` (whether a
    refused lesson was distilled again) and, for a merged or replaced item,
    ``merged_into``."""

    state: str
    label: str
    reason: str = ""
    actions: tuple[str, ...] = ()
    in_production: bool = False
    not_served: str = ""
    flags: tuple[str, ...] = ()
    repeats: bool = False
    merged_into: LinkedItem | None = None


def lifecycle_flags(item: MemoryItem) -> tuple[str, ...]:
    """The LifecycleStates ``item`` is in, from its own fields (``repeated`` needs the ``repeated`` annotation)."""
    flags = []
    if item.status == ItemStatus.APPROVED:
        if item_expired(item):
            flags.append(LifecycleState.EXPIRED)
        if item.stale_reason:
            flags.append(LifecycleState.STALE)
        if item.retirement_reason:
            flags.append(LifecycleState.RETIREMENT)
    elif _refused(item) and getattr(item, "lc_repeated", False):
        flags.append(LifecycleState.REPEATED)
    return tuple(flags)


def lifecycle_annotations(*, bank: Bank) -> dict:
    """What ``lifecycle_of`` reads, as annotations on MemoryItem rows of ``bank`` (put them in the list's query)."""
    release = served_release(bank=bank)
    in_release = (
        release_item_exists(release.searched)
        if release.searched is not None
        else Value(True, output_field=BooleanField())
    )
    merged = MemoryItemSupport.objects.filter(merged_item=OuterRef("pk"), kind=SupportKind.MERGED).order_by("-id")
    replacement = MemoryItem.objects.filter(pk=OuterRef("superseded_by_id"))
    return {
        "served": served_flag(bank=bank),
        "lc_in_release": in_release,
        "lc_unconfirmed": ExpressionWrapper(unconfirmed_risk_q(), output_field=BooleanField()),
        "lc_uncorroborated": ExpressionWrapper(~corroboration_q(), output_field=BooleanField()),
        "lc_repeated": Exists(MemoryItemSupport.objects.filter(item=OuterRef("pk"), kind=SupportKind.REPEATED)),
        "lc_merged_id": Subquery(merged.values("item__public_id")[:1]),
        "lc_merged_title": Subquery(merged.values("item__title")[:1]),
        "lc_replacement_id": Subquery(replacement.values("public_id")[:1]),
        "lc_replacement_title": Subquery(replacement.values("title")[:1]),
    }


def item_lifecycle(*, bank: Bank, item: MemoryItem) -> ItemLifecycle:
    """``item``'s lifecycle (an item of ``bank``), in one query."""
    return items_lifecycle(bank=bank, items=[item])[item.pk]


def items_lifecycle(*, bank: Bank, items: list[MemoryItem]) -> dict[int, ItemLifecycle]:
    """The lifecycle of each of ``items`` (items of ``bank``), by primary key, in one query."""
    if not items:
        return {}
    names = list(lifecycle_annotations(bank=bank))
    rows = MemoryItem.objects.filter(pk__in=[i.pk for i in items]).annotate(**lifecycle_annotations(bank=bank))
    found = {row["pk"]: row for row in rows.values("pk", *names)}
    production = served_release(bank=bank).number
    result = {}
    for item in items:
        for name in names:
            setattr(item, name, found.get(item.pk, {}).get(name))
        result[item.pk] = lifecycle_of(item, production=production)
    return result


def _refused(item: MemoryItem) -> bool:
    return item.status == ItemStatus.REJECTED or (item.status == ItemStatus.ARCHIVED and item.archived_as_wrong)


def _not_served(item: MemoryItem, production: int | None) -> str:
    """Why an approved, annotated ``item`` is not served now ("" when it is): the reason its page states."""
    if item.status != ItemStatus.APPROVED or item.served:
        return ""
    if not item.lc_in_release:
        return (
            f"Not served: production (release {production}) does not hold it yet. "
            "Publish a release on the Releases page to serve it."
        )
    if item.suspended:
        return "Not served: suspended until a reviewer decides on its retirement."
    if item_expired(item):
        return "Not served: past its validity."
    if item.lc_unconfirmed:
        return "Not served: it has a risk finding nobody confirmed."
    if item.lc_uncorroborated:
        return (
            "Not served: the bank requires corroboration (Trust page) and no human approved it. "
            "Approve it to serve it now, or wait for more independent runs."
        )
    return "Not served: below the bank's serving tier (Trust page)."


def _status_actions(item: MemoryItem) -> tuple[str, ...]:
    """The status decisions ITEM_TRANSITIONS allows from ``item``'s status."""
    moves = (
        ("approve", ItemStatus.APPROVED),
        ("reject", ItemStatus.REJECTED),
        ("archive", ItemStatus.ARCHIVED),
        ("supersede", ItemStatus.SUPERSEDED),
    )
    actions = tuple(name for name, to in moves if item_move_allowed(current=item.status, to=to))
    if item.status == ItemStatus.APPROVED:
        # Flagged (a new risk finding): approving again confirms it. Waiting for corroboration: a human approval
        # serves it at once.
        if item.needs_review_reason or getattr(item, "lc_uncorroborated", False):
            actions = ("approve", *actions)
        actions += ("archive-wrong",)
    return actions


def _linked(public_id, title) -> LinkedItem | None:
    return LinkedItem(public_id=public_id, title=title) if public_id else None


def lifecycle_of(item: MemoryItem, *, production: int | None) -> ItemLifecycle:
    """The lifecycle of ``item``, annotated with ``lifecycle_annotations`` (a list reads LIFECYCLE_FIELDS and
    the annotations: no query); ``production`` is the number of the release the bank serves (None before its
    first)."""
    status = item.status
    flags = lifecycle_flags(item)
    in_production = bool(status == ItemStatus.APPROVED and item.served)
    state, label, reason = status, item.get_status_display(), item.status_reason
    merged_into = None
    if status == ItemStatus.SUPERSEDED:
        merged_into = _linked(item.lc_merged_id, item.lc_merged_title)
        if merged_into is not None:
            state, label = ItemState.MERGED, "Merged"
        else:
            merged_into = _linked(item.lc_replacement_id, item.lc_replacement_title)
            state, label = ItemState.SUPERSEDED, "Superseded"
    elif _refused(item):
        state, label = ItemState.REFUSED, "Archived as wrong" if item.archived_as_wrong else "Rejected"
    elif status == ItemStatus.PROPOSED:
        reason = ""  # waiting in the queue says it all; a flag is needs_review_reason, shown as such
    elif status == ItemStatus.APPROVED:
        state, label, reason = _approved_state(item, production=production, in_production=in_production)
    lead, withheld = _LIFECYCLE_ACTIONS.get(state, ()), _WITHHELD_ACTIONS.get(state, frozenset())
    return ItemLifecycle(
        state=state,
        label=label,
        reason=reason,
        actions=lead + tuple(a for a in _status_actions(item) if a not in lead and a not in withheld),
        in_production=in_production,
        not_served=_not_served(item, production),
        flags=flags,
        repeats=LifecycleState.REPEATED in flags,
        merged_into=merged_into,
    )


def _approved_state(item: MemoryItem, *, production: int | None, in_production: bool) -> tuple[str, str, str]:
    """(state, label, reason) of an approved item: what withholds it or may soon, else where it is served."""
    if item.suspended:
        return ItemState.SUSPENDED, "Suspended", f"Proposed for retirement: {item.retirement_reason}".rstrip(": ")
    if item.retirement_reason:
        return ItemState.RETIREMENT, "Proposed for retirement", item.retirement_reason
    if item_expired(item):
        return ItemState.EXPIRED, "Expired", f"Past its validity since {validity_label(item.valid_until)}."
    if item.stale_reason:
        return ItemState.STALE, "Stale", item.stale_reason
    if in_production:
        where = f"production (release {production})" if production else "the approved items (no release yet)"
        return ItemState.APPROVED, "Approved · in production", f"Served to agents from {where}."
    # Why it is not served is ItemLifecycle.not_served.
    if not item.lc_in_release:
        return ItemState.APPROVED, "Approved · not yet in production", ""
    return ItemState.APPROVED, "Approved · not served", ""
