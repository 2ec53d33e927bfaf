"""The review API (scope ``review``): the review queue and its decisions for
teams with their own tools. The same selectors and services as the review UI,
so the same rules apply and every decision is recorded with the token as its
actor (item history and audit log). A token follows the bank's review policy:
where it needs several decisions per item, a token is not a reviewer who can
vote, so its approve, reject and edits of an approved item's text answer 403
``several_decisions_required`` (reviewers vote on the review page, an owner or
admin decides outright)."""

from __future__ import annotations

from datetime import date
from uuid import UUID

from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce
from ninja import Field, Query, Router, Schema

from accounts.tokens.auth import TokenAuth, api_responses
from memories.items import services
from memories.items.models import ItemOrigin, MemoryItemVersion
from memories.review import decisions
from memories.review import selectors as review_selectors
from memories.review.answers import detail_out, item_get, item_out
from memories.review.api_lifecycle import LifecycleStateIn, item_lifecycle_edit, lifecycle_router
from memories.serving.api import MAX_OFFSET, MAX_PAGE
from memories.serving.schemas import ApproveIn, EditIn, RejectIn, ReviewItemDetailOut, ReviewListOut

router = Router(tags=["review"])
review_auth = TokenAuth(scope="review")

# What the list answers (the queue selector loads only the queue page's columns).
LIST_FIELDS = (*review_selectors.LIST_FIELDS, "content")


class ReviewQueueIn(Schema):
    limit: int = Field(20, ge=1, le=MAX_PAGE, description="Items per page (1–100).")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="Items to skip.")
    q: str = Field("", max_length=200, description="Words in the title, description or content.")
    origin: ItemOrigin | None = Field(None, description="success, failure, matts-parallel, … manual, import.")
    verdict: str = Field("", pattern="^(|success|failure)$", description="The verdict it was distilled under.")
    agent: str = Field("", max_length=200, description="Distilled from a trajectory of this agent.")
    date_from: date | None = Field(None, description="Proposed on or after this day (UTC).")
    date_to: date | None = Field(None, description="Proposed on or before this day (UTC).")
    has_duplicate: bool = Field(False, description="Only items with near-duplicate suggestions.")
    state: LifecycleStateIn | None = Field(
        None,
        description="Instead of proposed items: refused items distilled again (repeated), approved items past "
        "their validity (expired), stale ones, or those Impact proposes for retirement.",
    )
    has_risks: bool = Field(False, description="Only items with unconfirmed risk findings.")


@router.get(
    "/review/items",
    auth=review_auth,
    response=api_responses({200: ReviewListOut}),
    summary="The review queue",
)
def review_queue(request, filters: Query[ReviewQueueIn]):
    """Proposed items of the token's bank, oldest first (the review page's
    order), narrowed by the same filters as the review page."""
    qs = review_selectors.review_queue(
        bank=request.bank,
        origin=filters.origin or "",
        verdict=filters.verdict,
        agent=filters.agent.strip(),
        date_from=filters.date_from,
        date_to=filters.date_to,
        has_duplicate=filters.has_duplicate,
        text=filters.q.strip(),
        state=filters.state.value if filters.state else "",
        has_risks=filters.has_risks,
    )
    latest = MemoryItemVersion.objects.filter(item=OuterRef("pk")).order_by("-number").values("number")[:1]
    page = list(
        qs.only(*LIST_FIELDS).annotate(version=Coalesce(Subquery(latest), 0))[
            filters.offset : filters.offset + filters.limit
        ]
    )
    return {"count": qs.count(), "items": [item_out(item, item.version, item.risk_count) for item in page]}


@router.get(
    "/review/items/{item_id}",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404),
    summary="One item with its sources and near-duplicates",
)
def reviewitem_get(request, item_id: UUID):
    """Any item of the bank (whatever its status), with the trajectories it
    was distilled from and the near-duplicates suggested when it was proposed
    (with their content, to compare)."""
    return detail_out(item_get(request, item_id))


@router.post(
    "/review/items/{item_id}/approve",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404, 409, 413),
    summary="Approve an item",
)
def review_approve(request, item_id: UUID, payload: ApproveIn | None = None):
    """Make the item servable (it is served once embedded, in the background).
    Approving an approved item is a no-op; a superseded one answers 409, and
    so does an item whose approved near-duplicate is at or above the bank's
    duplicate threshold (``duplicate_needs_confirmation``; send
    ``confirm_duplicate: true`` to approve it anyway), an item with
    unconfirmed risk findings (``risks_need_confirmation``, the findings in
    ``risks``; send ``confirm_risks: true`` to approve it anyway, recorded
    with this token as who confirmed) and a stale ``seen_version``
    (``stale_version``). Under a review policy of several decisions per
    item it answers 403 ``several_decisions_required``: a token does not
    decide alone there."""
    item = item_get(request, item_id)
    options = payload.model_dump() if payload else {}
    item = decisions.memory_item_approve(item=item, author=None, token=request.api_token, **options)
    return detail_out(item)


@router.post(
    "/review/items/{item_id}/reject",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404, 409, 413),
    summary="Reject an item (a reason is required)",
)
def review_reject(request, item_id: UUID, payload: RejectIn):
    """Decline a proposed item, keeping the reason. Rejecting a rejected item
    is a no-op; any other status answers 409 (archive an approved item in the UI). Under a review
    policy of several decisions per item it answers 403 ``several_decisions_required``."""
    item = item_get(request, item_id)
    item = decisions.memory_item_reject(item=item, author=None, token=request.api_token, **payload.model_dump())
    return detail_out(item)


@router.patch(
    "/review/items/{item_id}",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404, 409, 413),
    summary="Edit an item's text or tags",
)
def review_edit(request, item_id: UUID, payload: EditIn):
    """Change the title, description, content or tags (the status is kept;
    changed text is embedded again), its validity (``valid_until``: a moment
    in the past answers 422; an explicit null removes it), or confirm that a
    stale item still holds (``confirm_current``). A superseded item answers 409. Under a review policy
    of several decisions per item, a change of an approved item's text answers 403
    ``several_decisions_required`` (it would be served at once)."""
    item = item_get(request, item_id)
    values = payload.model_dump()
    valid_until, confirm_current = values.pop("valid_until"), values.pop("confirm_current")
    with transaction.atomic():  # one version check for both parts
        item = item_lifecycle_edit(
            item=item,
            token=request.api_token,
            valid_until=valid_until,
            set_validity="valid_until" in payload.model_fields_set,
            confirm_current=confirm_current,
            seen_version=values.pop("seen_version"),
        )
        item = services.memory_item_edit(item=item, author=None, token=request.api_token, **values)
    return detail_out(item)


router.add_router("", lifecycle_router)
