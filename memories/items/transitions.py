"""The memory item's status machine: one declared table of the allowed moves
and the one function every status change goes through."""

from __future__ import annotations

from collections.abc import Callable

from memories.items.events import items_status_announce
from memories.items.models import ItemStatus, MemoryItem
from memories.items.versions import item_lock, item_version_record
from reasoningbank_site.errors import Conflict

S = ItemStatus

# Which status an item may move to from each status. Superseded is terminal;
# an archived (or rejected) item can be approved again, or reopened (proposed).
ITEM_TRANSITIONS: dict[str, frozenset[str]] = {
    S.PROPOSED: frozenset({S.APPROVED, S.REJECTED, S.SUPERSEDED}),
    S.APPROVED: frozenset({S.ARCHIVED, S.SUPERSEDED}),
    S.REJECTED: frozenset({S.APPROVED, S.PROPOSED}),
    S.ARCHIVED: frozenset({S.APPROVED, S.PROPOSED}),
    S.SUPERSEDED: frozenset(),
}

# Which decisions a reviewer may take back (undo, or revert from the history):
# the decision's status → the statuses it may return to (the one it came from).
ITEM_REVERTS: dict[str, frozenset[str]] = {
    S.APPROVED: frozenset({S.PROPOSED, S.REJECTED, S.ARCHIVED}),
    S.REJECTED: frozenset({S.PROPOSED}),
    S.ARCHIVED: frozenset({S.APPROVED}),
}

# Text can be edited in every status that can still move (not in a terminal one).
EDITABLE_STATUSES = frozenset(status for status, moves in ITEM_TRANSITIONS.items() if moves)


def item_move_allowed(*, current: str, to: str) -> bool:
    return to in ITEM_TRANSITIONS[current]


def _refusal(current: str, to: str) -> str:
    sources = [str(s) for s, moves in ITEM_TRANSITIONS.items() if to in moves]
    article = "An" if current[0] in "aeiou" else "A"
    only = ", ".join(sources[:-1]) + f" or {sources[-1]}" if len(sources) > 1 else "".join(sources)
    return f"{article} {current} item cannot be {to}. Only {only} items can be {to}."


def item_status_move(
    *,
    item: MemoryItem,
    to: str,
    author=None,
    reason: str | None = None,
    prepare: Callable[[MemoryItem], list[str]] | None = None,
    action: str | None = None,
    revert: bool = False,
    token=None,
) -> bool:
    """Move ``item`` to status ``to`` under a row lock (the caller holds a
    transaction) and record the version (action = the new status). Already
    in ``to``: writes nothing and returns False (the item is then freshly
    read and locked). ``reason`` (when not None) is kept as the status reason
    and the version's note; ``prepare(item)`` sets what else the move changes
    and returns those field names; ``action`` names the version when the move
    is part of a larger act (a merge); ``token`` is the API token that acted.
    Returns True when the item moved (its webhook event, if any, is
    sent after commit). Raises Conflict when ITEM_TRANSITIONS
    does not allow the move. ``revert=True`` takes a decision back instead:
    ITEM_REVERTS says which, and the version's action is "reverted"."""
    item_lock(item)
    if item.status == to:
        return False
    allowed = to in ITEM_REVERTS.get(item.status, ()) if revert else item_move_allowed(current=item.status, to=to)
    if not allowed:
        raise Conflict(_refusal(item.status, to), code="invalid_transition")
    item.status = to
    fields = ["status", "updated_at"]
    if reason is not None:
        item.status_reason = reason
        fields.append("status_reason")
    if prepare is not None:
        fields += prepare(item)
    item.save(update_fields=fields)
    item_version_record(
        item=item, action="reverted" if revert else (action or to), author=author, note=reason or "", token=token
    )
    items_status_announce(items=[item])
    return True
