"""The review API's answers: an item as the queue lists it, and one item
in full (sources, near-duplicates, lifecycle); the lookup of an item of the
token's bank."""

from __future__ import annotations

from uuid import UUID

from memories.items.lifecycle import item_lifecycle
from memories.items.models import MemoryItem
from memories.learning.selectors import item_expired, item_repeats
from memories.review.collaboration import item_current_version
from memories.review.selectors import item_for_bank, item_near_duplicates, item_sources
from memories.trust.corroboration import item_corroboration_out
from memories.trust.models import tier_name
from memories.trust.risk_reads import item_risks, risk_out
from memories.trust.selectors import item_tier
from reasoningbank_site.errors import NotFound


def item_out(item: MemoryItem, version: int, risk_count: int = 0) -> dict:
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
        "valid_until": item.valid_until,
        "expired": item_expired(item),
        "stale_reason": item.stale_reason,
        "retirement_reason": item.retirement_reason,
        "suspended": item.suspended,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
        "version": version,
    }


def detail_out(item: MemoryItem) -> dict:
    sources = item_sources(item=item)
    risks = item_risks(item=item)
    return {
        **item_out(item, item_current_version(item), sum(not f.confirmed for f in risks)),
        "risks": [risk_out(f) for f in risks],
        "verdict_tier": tier_name(item_tier(item=item)),
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
            for d in item_near_duplicates(item=item)
        ],
        **item_lifecycle_out(item),
        "corroboration": item_corroboration_out(item),
    }


def item_get(request, item_id: UUID) -> MemoryItem:
    try:
        return item_for_bank(bank=request.bank, public_id=item_id)
    except MemoryItem.DoesNotExist:
        raise NotFound("No memory item with this id in this bank.") from None


def item_lifecycle_out(item: MemoryItem) -> dict:
    """The detail answer's lifecycle fields: its state (memories.items.lifecycle) and the evidence."""
    lifecycle = item_lifecycle(bank=item.bank, item=item)
    return {
        "state": lifecycle.state,
        "state_reason": lifecycle.reason,
        "environment": item.environment or {},
        "stale_environment": item.stale_environment or {},
        "retirement_evidence": item.retirement_evidence or {},
        "archived_as_wrong": item.archived_as_wrong,
        "superseded_by": lifecycle.merged_into.public_id if lifecycle.merged_into else None,
        "repeats": [
            {
                "title": r.title,
                "content": r.content,
                "similarity": r.similarity,
                "trajectories": r.trajectory_ids,
                "created_at": r.created_at,
            }
            for r in item_repeats(item=item)
        ],
    }
