"""What reviewers read about duplicates: an item's supporting evidence, the
approved items that duplicate it (the approval check), the refused items it
looks like (rejected look-alikes), and a side-by-side comparison of two items
with a word diff. Near-duplicates and look-alikes are found by the one
near-duplicate search (``memories.items.near_duplicates``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np

from memories.embedding.model import embedding_model_name, item_embedding_hash
from memories.items.models import ItemStatus, MemoryItem, MemoryItemSupport, MemoryItemVersion
from memories.items.near_duplicates import near_duplicates_search
from memories.review.selectors import NearDuplicate, _word_diff


def _has_current_embedding(item: MemoryItem) -> bool:
    return (
        item.embedding is not None
        and item.embedding_model == embedding_model_name()
        and item.embedding_hash == item_embedding_hash(item)
    )


def _uuids(values) -> list[uuid.UUID]:
    out = []
    for value in values:
        try:
            out.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return out


def approved_duplicates(*, item: MemoryItem, threshold: float) -> list[NearDuplicate]:
    """The approved items of ``item``'s bank (other than it) whose cosine
    similarity to it is ≥ ``threshold``, most similar first. With a current
    embedding, by the near-duplicate search over approved items (so items
    approved after this one was proposed count too); without one (edited and
    not re-embedded yet), from the suggestions recorded at proposal, in both
    directions (this item's, and approved items' naming this one)."""
    if _has_current_embedding(item):
        found = near_duplicates_search(
            bank=item.bank, vector=item.embedding, exclude_pk=item.pk, statuses=(ItemStatus.APPROVED,)
        )
        similarity = {d["id"]: d["similarity"] for d in found if d["similarity"] >= threshold}
        rows = MemoryItem.objects.filter(bank_id=item.bank_id, public_id__in=_uuids(similarity)).defer("embedding")
        return sorted(
            (NearDuplicate(item=row, similarity=similarity[str(row.public_id)]) for row in rows),
            key=lambda d: -d.similarity,
        )
    similarity: dict[str, float] = {}
    for entry in item.near_duplicates or []:
        value = entry.get("similarity") if isinstance(entry, dict) else None
        if isinstance(value, (int, float)) and value >= threshold:
            similarity[str(entry.get("id"))] = float(value)
    approved = MemoryItem.objects.filter(bank_id=item.bank_id, status=ItemStatus.APPROVED).exclude(pk=item.pk)
    found = list(approved.filter(public_id__in=_uuids(similarity)).defer("embedding"))
    for other in approved.filter(near_duplicates__contains=[{"id": str(item.public_id)}]).defer("embedding"):
        entry = next(d for d in other.near_duplicates if isinstance(d, dict) and d.get("id") == str(item.public_id))
        if float(entry.get("similarity") or 0) >= threshold and other not in found:
            similarity[str(other.public_id)] = float(entry["similarity"])
            found.append(other)
    return sorted(
        (NearDuplicate(item=row, similarity=similarity[str(row.public_id)]) for row in found),
        key=lambda d: -d.similarity,
    )


# Cosine similarity at or above which a refused item is shown to reviewers as a look-alike: below
# the repeat and near-duplicate thresholds (0.85 by default), so a refused lesson in other words shows too.
LOOKALIKE_SIMILARITY = 0.75
# The versions that record a refusal: whose author refused the item.
REFUSAL_ACTIONS = ("rejected", "archived-as-wrong")


@dataclass(frozen=True)
class RejectedLookalike:
    public_id: uuid.UUID
    title: str
    similarity: float
    archived_as_wrong: bool  # else rejected
    reason: str
    refused_by: str  # who refused it (actor_label); empty when no refusal was recorded (an import)


def rejected_lookalikes(*, item: MemoryItem) -> list[RejectedLookalike]:
    """The up-to-NEAR_DUPLICATE_LIMIT items of ``item``'s bank that reviewers
    refused (rejected, or archived as wrong) with cosine similarity to it ≥
    LOOKALIKE_SIMILARITY, most similar first, each with the reason and who
    refused it. Empty for an item without an embedding."""
    if item.embedding is None:
        return []
    found = near_duplicates_search(
        bank=item.bank, vector=item.embedding, exclude_pk=item.pk, refused=True, min_similarity=LOOKALIKE_SIMILARITY
    )
    if not found:
        return []
    rows = MemoryItem.objects.filter(bank_id=item.bank_id, public_id__in=_uuids(d["id"] for d in found)).only(
        "public_id", "title", "archived_as_wrong", "status_reason"
    )
    rows = {str(row.public_id): row for row in rows}
    refusals = {
        version.item_id: version
        for version in MemoryItemVersion.objects.filter(
            item_id__in=[row.pk for row in rows.values()], action__in=REFUSAL_ACTIONS
        )
        .select_related("author", "actor_token")
        .order_by("item_id", "-number")
        .distinct("item_id")
    }
    lookalikes = []
    for entry in found:
        row = rows.get(entry["id"])
        if row is None:  # deleted since the search
            continue
        refusal = refusals.get(row.pk)
        lookalikes.append(
            RejectedLookalike(
                public_id=row.public_id,
                title=row.title,
                similarity=entry["similarity"],
                archived_as_wrong=row.archived_as_wrong,
                reason=row.status_reason or (refusal.note if refusal else ""),
                refused_by=refusal.actor_label if refusal else "",
            )
        )
    return lookalikes


def item_supports(*, item: MemoryItem) -> list[MemoryItemSupport]:
    """``item``'s supporting evidence, oldest first (later distillations of the
    same lesson, items merged into it), with the merged items and authors."""
    return list(item.supports.select_related("merged_item", "author").order_by("created_at", "id"))


def supports_trajectory_ids(supports: list[MemoryItemSupport]) -> list[str]:
    """The distinct trajectories (public ids, in order) the evidence came from."""
    seen: list[str] = []
    for support in supports:
        for tid in support.trajectory_ids or []:
            if str(tid) not in seen:
                seen.append(str(tid))
    return seen


@dataclass
class Comparison:
    item: MemoryItem
    other: MemoryItem
    similarity: float | None  # None when neither a suggestion nor current embeddings say
    diffs: list[tuple[str, list[tuple[str, str]]]]  # (field, [(op, words)]) from item's text to other's

    @property
    def merges(self) -> list[tuple[MemoryItem, MemoryItem]]:
        """The merges memory_item_merge would accept, as (merged, kept)."""
        return [
            (a, b)
            for a, b in ((self.item, self.other), (self.other, self.item))
            if b.status in (ItemStatus.PROPOSED, ItemStatus.APPROVED)
            and a.status in (ItemStatus.PROPOSED, ItemStatus.APPROVED)
        ]


def items_compare(*, item: MemoryItem, other: MemoryItem) -> Comparison:
    """``item`` and ``other`` side by side: a word diff (difflib) of each text
    field from ``item``'s to ``other``'s, and their similarity — from the
    suggestion recorded at proposal (either direction), else from their
    current embeddings."""
    similarity = None
    for a, b in ((item, other), (other, item)):
        for entry in a.near_duplicates or []:
            if isinstance(entry, dict) and entry.get("id") == str(b.public_id):
                similarity = entry.get("similarity")
    if similarity is None and _has_current_embedding(item) and _has_current_embedding(other):
        similarity = round(float(np.dot(item.embedding, other.embedding)), 4)
    diffs = [
        (field, _word_diff(getattr(item, field), getattr(other, field)))
        for field in ("title", "description", "content")
    ]
    return Comparison(item=item, other=other, similarity=similarity, diffs=diffs)
