"""Reads for trajectories."""

from __future__ import annotations

import uuid

from django.db.models import Prefetch, QuerySet

from accounts.models import Bank
from memories.models import MemoryItem
from trajectories.models import Judgment, Trajectory


def trajectory_get_for_bank(*, bank: Bank, public_id: str | uuid.UUID) -> Trajectory:
    """The trajectory ``public_id`` of ``bank``, with its judgments prefetched
    (oldest first). Raises Trajectory.DoesNotExist for an unknown id, a
    malformed one, or another bank's trajectory — callers answer all with 404."""
    try:
        key = public_id if isinstance(public_id, uuid.UUID) else uuid.UUID(str(public_id))
    except (ValueError, AttributeError, TypeError):
        raise Trajectory.DoesNotExist(f"no trajectory {public_id!r}") from None
    return (
        Trajectory.objects.filter(bank=bank, public_id=key)
        .defer("steps", "metadata")
        .prefetch_related(Prefetch("judgments", queryset=Judgment.objects.order_by("created_at", "id")))
        .get()
    )


def trajectory_derived_items(*, trajectory: Trajectory) -> QuerySet[MemoryItem] | list[MemoryItem]:
    """Memory items distilled from this trajectory's experience, oldest first
    (one query; none when the trajectory has no experience yet)."""
    if trajectory.experience_id is None:
        return []
    return (
        MemoryItem.objects.filter(bank_id=trajectory.bank_id, experience_id=trajectory.experience_id)
        .only("public_id", "title", "status", "origin", "created_at")
        .order_by("created_at", "id")
    )
