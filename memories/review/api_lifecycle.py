"""The review API's part for what follows serving: the lifecycle fields of an
item's answer, its PATCH (validity, staleness), the queue's state filter,
and the decisions reopen, archive as wrong, keep (a retirement proposal) and
supersede. Same services as the review UI, the token as the actor."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from uuid import UUID

from django.db import transaction
from ninja import Field, Router

from accounts.tokens.auth import TokenAuth, api_responses
from memories.items.models import MemoryItem
from memories.learning.refusals import memory_item_archive_as_wrong, memory_item_reopen
from memories.learning.retirement import memory_item_retirement_keep, memory_item_supersede_with
from memories.learning.selectors import LifecycleState
from memories.learning.validity import memory_item_stale_clear, memory_item_validity_set
from memories.review.answers import detail_out, item_get
from memories.review.collaboration import item_version_check
from memories.review.selectors import item_for_bank
from memories.serving.schemas import BodyIn, CleanStr, ReviewItemDetailOut
from reasoningbank_site.errors import Invalid

lifecycle_router = Router(tags=["review"])
review_auth = TokenAuth(scope="review")

LifecycleStateIn = Enum("LifecycleStateIn", {value: value for value in LifecycleState.values}, type=str)


def item_lifecycle_edit(
    *,
    item: MemoryItem,
    token,
    valid_until: datetime | None,
    set_validity: bool,
    confirm_current: bool,
    seen_version: int | None,
) -> MemoryItem:
    """The PATCH's lifecycle part, after the version check (the caller then edits the text without one)."""
    item_version_check(item=item, seen_version=seen_version)
    if set_validity:
        item = memory_item_validity_set(item=item, author=None, valid_until=valid_until, token=token)
    if confirm_current:
        item = memory_item_stale_clear(item=item, author=None, token=token)
    return item


class NoteIn(BodyIn):
    seen_version: int | None = None
    note: CleanStr = Field("", max_length=2000, description="Why (kept in its history).")


class WrongIn(BodyIn):
    seen_version: int | None = None
    reason: CleanStr = Field(..., min_length=1, max_length=2000, description="Why it is wrong (required).")


class SupersedeIn(BodyIn):
    seen_version: int | None = None
    replacement: UUID = Field(..., description="The approved or proposed item of this bank that replaces it.")


@lifecycle_router.post(
    "/review/items/{item_id}/reopen",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404, 409, 413),
    summary="Put a refused item back in the queue",
)
def review_reopen(request, item_id: UUID, payload: NoteIn | None = None):
    """A rejected or archived-as-wrong item becomes proposed again, its
    repeats kept as evidence. Any other status answers 409."""
    payload = payload or NoteIn()
    item = memory_item_reopen(
        item=item_get(request, item_id), author=None, token=request.api_token, **payload.model_dump()
    )
    return detail_out(item)


@lifecycle_router.post(
    "/review/items/{item_id}/archive-as-wrong",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404, 409, 413),
    summary="Stop serving an approved item because it is wrong",
)
def review_archive_as_wrong(request, item_id: UUID, payload: WrongIn):
    """Archive an approved item, keeping the reason: later distillations of
    the same lesson are recorded on it as repeats, never queued."""
    item = memory_item_archive_as_wrong(
        item=item_get(request, item_id), author=None, token=request.api_token, **payload.model_dump()
    )
    return detail_out(item)


@lifecycle_router.post(
    "/review/items/{item_id}/keep",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404, 409, 413),
    summary="Keep an item proposed for retirement",
)
def review_keep(request, item_id: UUID, payload: NoteIn | None = None):
    """Clear Impact's retirement proposal (a suspended item is served again).
    To retire it instead, archive it or supersede it."""
    payload = payload or NoteIn()
    item = memory_item_retirement_keep(
        item=item_get(request, item_id), author=None, token=request.api_token, **payload.model_dump()
    )
    return detail_out(item)


@lifecycle_router.post(
    "/review/items/{item_id}/supersede",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404, 409, 413),
    summary="Replace an item by another",
)
def review_supersede(request, item_id: UUID, payload: SupersedeIn):
    """The item becomes superseded (terminal), linked to its replacement."""
    item = item_get(request, item_id)
    try:
        replacement = item_for_bank(bank=request.bank, public_id=payload.replacement)
    except MemoryItem.DoesNotExist:
        raise Invalid("replacement: no memory item with this id in this bank.") from None
    with transaction.atomic():
        item = memory_item_supersede_with(
            item=item, replacement=replacement, author=None, seen_version=payload.seen_version, token=request.api_token
        )
    return detail_out(item)
