"""An item's provenance, computed and stored: from the steps of the run it
was just distilled from, or again (after an edit) from its source
trajectories while their steps are kept. When they cannot be read the
provenance is "unknown", with the reason, and counts as unknown, never as safe."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from django.utils import timezone

from memories.items.models import ItemOrigin, MemoryItem
from memories.trust.provenance.findings import DETECTOR
from memories.trust.provenance.models import ItemProvenance, ProvenanceStatus
from memories.trust.provenance.spans import Span, item_spans

WRITTEN_BY_A_PERSON = "the item was written by a person: no agent run is behind its words."
IMPORTED = "the item was imported: the runs it was distilled from are not in this bank."
SOURCES_DELETED = "its source trajectories were deleted."
PURGED = "the source steps were purged on {date} (the bank's retention)."


class Inputs(NamedTuple):
    steps: list[dict]
    task: str
    unknown: str  # why the provenance cannot be computed ("" when it can)


def item_values(item: MemoryItem) -> dict[str, str]:
    return {"title": item.title or "", "description": item.description or "", "content": item.content or ""}


def provenance_inputs(item: MemoryItem) -> Inputs:
    """The steps and task ``item`` was distilled from, read again from its
    experience's trajectories, or why they cannot be."""
    if item.origin == ItemOrigin.MANUAL:
        return Inputs([], "", WRITTEN_BY_A_PERSON)
    if item.origin == ItemOrigin.IMPORT:
        return Inputs([], "", IMPORTED)
    runs = list(item.experience.trajectories.select_related("raw").order_by("created_at")) if item.experience_id else []
    if not runs:
        return Inputs([], "", SOURCES_DELETED)
    if any(t.steps_purged for t in runs):
        dates = [t.steps_purged_at for t in runs if t.steps_purged_at]
        return Inputs([], "", PURGED.format(date=min(dates).date().isoformat() if dates else "an unknown date"))
    return Inputs([s for t in runs for s in t.steps or []], runs[0].task or "", "")


def provenance_row(item: MemoryItem, spans: Sequence[Span] | None, reason: str = "") -> ItemProvenance:
    """An unsaved provenance: known with ``spans``, or unknown for ``reason`` (spans None)."""
    return ItemProvenance(
        item=item,
        status=ProvenanceStatus.UNKNOWN if spans is None else ProvenanceStatus.KNOWN,
        reason=reason[:300] if spans is None else "",
        spans=[s.as_dict() for s in spans or ()],
        method=DETECTOR,
        computed_at=timezone.now(),
    )


def provenances_store(rows: Sequence[ItemProvenance]) -> None:
    """Store ``rows``, replacing each item's earlier provenance (one upsert on the item)."""
    ItemProvenance.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["item"],
        update_fields=["status", "reason", "spans", "method", "computed_at"],
    )


def item_provenance_recompute(item: MemoryItem) -> tuple[list[Span] | None, Inputs]:
    """Compute ``item``'s provenance again from its sources and store it: the
    spans (None when unknown) and the inputs they were computed from."""
    inputs = provenance_inputs(item)
    spans = None if inputs.unknown else item_spans(**item_values(item), steps=inputs.steps, task=inputs.task)
    provenances_store([provenance_row(item, spans, inputs.unknown)])
    return spans, inputs


def provenance_unknown(item: MemoryItem) -> bool:
    """Whether ``item``'s provenance is recorded as unknown (written by a person, imported, steps purged)."""
    return ItemProvenance.objects.filter(item=item, status=ProvenanceStatus.UNKNOWN).exists()
