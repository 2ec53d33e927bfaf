"""The review API (scope ``review``): the review queue and its decisions for
teams with their own tools. The same selectors and services as the review UI,
so the same rules apply and every decision is recorded with the token as its
actor (item history and audit log)."""

from __future__ import annotations

from datetime import date
from uuid import UUID

from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import JsonResponse
from ninja import Field, Query, Router, Schema

from accounts.auth import TokenAuth, api_responses
from memories import selectors, services
from memories.api import MAX_OFFSET, MAX_PAGE
from memories.models import ItemOrigin, MemoryItem, MemoryItemVersion
from memories.schemas import ApproveIn, EditIn, RejectIn, ReviewItemDetailOut, ReviewListOut
from reasoningbank_site.errors import NotFound, RisksNeedConfirmation

router = Router(tags=["review"])
review_auth = TokenAuth(scope="review")

# What the list answers (the queue selector loads only the queue page's columns).
LIST_FIELDS = (*selectors.LIST_FIELDS, "content")


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
    has_risks: bool = Field(False, description="Only items with unconfirmed risk findings.")


def _item_out(item: MemoryItem, version: int, risk_count: int = 0) -> dict:
    return {
        "id": item.public_id,
        "title": item.title,
        "description": item.description,
        "content": item.content,
        "status": item.status,
        "origin": item.origin,
        "verdict_label": item.verdict_label,
        "tags": list(item.tags),
        "near_duplicate_count": len(item.near_duplicates or []),
        "risk_count": risk_count,
        "needs_review_reason": item.needs_review_reason,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
        "version": version,
    }


def _detail_out(item: MemoryItem) -> dict:
    sources = selectors.item_sources(item=item)
    risks = selectors.item_risks(item=item)
    return {
        **_item_out(item, services.item_current_version(item), sum(not f.confirmed for f in risks)),
        "risks": [selectors.risk_out(f) for f in risks],
        "verdict_tier": selectors.tier_name(selectors.item_tier(item=item)),
        "status_reason": item.status_reason,
        "approved_at": item.approved_at,
        "prompt_version": item.prompt_version,
        "model": item.model,
        "cited_steps": [c for c in item.cited_steps or [] if isinstance(c, dict)],
        "sources": sources.trajectory_ids,
        "sources_deleted": sources.deleted,
        "near_duplicates": [
            {
                "id": d.item.public_id,
                "title": d.item.title,
                "description": d.item.description,
                "content": d.item.content,
                "status": d.item.status,
                "similarity": d.similarity,
            }
            for d in selectors.item_near_duplicates(item=item)
        ],
    }


def _item(request, item_id: UUID) -> MemoryItem:
    try:
        return selectors.item_for_bank(bank=request.bank, public_id=item_id)
    except MemoryItem.DoesNotExist:
        raise NotFound("No memory item with this id in this bank.") from None


@router.get(
    "/review/items",
    auth=review_auth,
    response=api_responses({200: ReviewListOut}),
    summary="The review queue",
)
def review_queue(request, filters: Query[ReviewQueueIn]):
    """Proposed items of the token's bank, oldest first (the review page's
    order), narrowed by the same filters as the review page."""
    qs = selectors.review_queue(
        bank=request.bank,
        origin=filters.origin or "",
        verdict=filters.verdict,
        agent=filters.agent.strip(),
        date_from=filters.date_from,
        date_to=filters.date_to,
        has_duplicate=filters.has_duplicate,
        text=filters.q.strip(),
        has_risks=filters.has_risks,
    )
    latest = MemoryItemVersion.objects.filter(item=OuterRef("pk")).order_by("-number").values("number")[:1]
    page = list(
        qs.only(*LIST_FIELDS).annotate(version=Coalesce(Subquery(latest), 0))[
            filters.offset : filters.offset + filters.limit
        ]
    )
    return {"count": qs.count(), "items": [_item_out(item, item.version, item.risk_count) for item in page]}


@router.get(
    "/review/items/{item_id}",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404),
    summary="One item with its sources and near-duplicates",
)
def review_item(request, item_id: UUID):
    """Any item of the bank (whatever its status), with the trajectories it
    was distilled from and the near-duplicates suggested when it was proposed
    (with their content, to compare)."""
    return _detail_out(_item(request, item_id))


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
    (``stale_version``)."""
    item = _item(request, item_id)
    options = payload.model_dump() if payload else {}
    try:
        item = services.memory_item_approve(item=item, author=None, token=request.api_token, **options)
    except RisksNeedConfirmation as exc:
        body = {"detail": exc.message, "code": exc.code, "risks": [selectors.risk_out(f) for f in exc.findings]}
        return JsonResponse(body, status=409)
    return _detail_out(item)


@router.post(
    "/review/items/{item_id}/reject",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404, 409, 413),
    summary="Reject an item (a reason is required)",
)
def review_reject(request, item_id: UUID, payload: RejectIn):
    """Decline a proposed item, keeping the reason. Rejecting a rejected item
    is a no-op; any other status answers 409 (archive an approved item in the UI)."""
    item = _item(request, item_id)
    item = services.memory_item_reject(item=item, author=None, token=request.api_token, **payload.model_dump())
    return _detail_out(item)


@router.patch(
    "/review/items/{item_id}",
    auth=review_auth,
    response=api_responses({200: ReviewItemDetailOut}, 404, 409, 413),
    summary="Edit an item's text or tags",
)
def review_edit(request, item_id: UUID, payload: EditIn):
    """Change the title, description, content or tags (the status is kept;
    changed text is embedded again). A superseded item answers 409."""
    item = _item(request, item_id)
    item = services.memory_item_edit(item=item, author=None, token=request.api_token, **payload.model_dump())
    return _detail_out(item)
