"""Consolidation: a lesson distilled again, or an item merged into another,
becomes supporting evidence on the item that already holds it (a
MemoryItemSupport row, the item's ``support_count``, and a version in its
history), instead of a second item for reviewers to find and compare."""

from __future__ import annotations

import uuid

from django.db.models import F

from memories.models import Experience, ItemStatus, MemoryItem, MemoryItemSupport, SupportKind
from memories.services.versions import item_lock, item_version_record

SUPPORTABLE_STATUSES = (ItemStatus.PROPOSED, ItemStatus.APPROVED)


def _trajectory_ids(cited_steps, experience: Experience | None) -> list[str]:
    """The cited trajectories (distinct, in order), else the experience's."""
    ids: list[str] = []
    for cite in cited_steps or ():
        if isinstance(cite, dict) and cite.get("trajectory"):
            try:
                tid = str(uuid.UUID(str(cite["trajectory"])))
            except ValueError:
                continue
            if tid not in ids:
                ids.append(tid)
    if not ids and experience is not None:
        # By relation name: this app never imports the trajectories app.
        ids = [str(p) for p in experience.trajectories.order_by("created_at").values_list("public_id", flat=True)[:5]]
    return ids


def _support_add(*, item: MemoryItem, support: MemoryItemSupport, action: str, note: str, author=None) -> None:
    support.save()
    MemoryItem.objects.filter(pk=item.pk).update(support_count=F("support_count") + 1)
    item.support_count += 1
    item_version_record(item=item, action=action, author=author, note=note)


def _support_of(source: MemoryItem, *, item: MemoryItem, kind: str, similarity, **extra) -> MemoryItemSupport:
    """An unsaved MemoryItemSupport on ``item`` keeping ``source``'s text and
    provenance (a distilled proposal, or an item merged in)."""
    return MemoryItemSupport(
        item=item,
        kind=kind,
        experience=source.experience,
        trajectory_ids=_trajectory_ids(source.cited_steps, source.experience),
        similarity=similarity,
        title=source.title,
        description=source.description,
        content=source.content,
        origin=source.origin,
        verdict_label=source.verdict_label,
        cited_steps=list(source.cited_steps or []),
        model=source.model,
        prompt_version=source.prompt_version,
        **extra,
    )


def memory_item_support_record(
    *, item_public_id: str, proposal: MemoryItem, similarity: float
) -> MemoryItemSupport | None:
    """Record the unsaved distilled ``proposal`` as supporting evidence on the
    item ``item_public_id`` (of the same bank) it duplicates: its text,
    origin, verdict, model, prompt, cited steps, experience, trajectories and
    ``similarity`` are kept; the item's ``support_count`` grows by one and its
    history gets a "supported" version naming the trajectories. Returns None
    (nothing written) when that item no longer exists or is no longer proposed
    or approved, so the caller proposes it after all. The caller holds a
    transaction."""
    item = MemoryItem.objects.filter(bank_id=proposal.bank_id, public_id=item_public_id).first()
    if item is None:
        return None
    item_lock(item)
    if item.status not in SUPPORTABLE_STATUSES:
        return None
    support = _support_of(proposal, item=item, kind=SupportKind.DISTILLED, similarity=similarity)
    where = ", ".join(f"trajectory {t[:8]}" for t in support.trajectory_ids) or "a trajectory"
    note = f"Distilled again from {where} (similarity {similarity:.2f}): “{proposal.title}”."
    _support_add(item=item, support=support, action="supported", note=note)
    return support


def memory_item_support_merged(*, into: MemoryItem, item: MemoryItem, author, similarity: float | None) -> None:
    """Keep ``item``'s text (as edited by reviewers) on ``into`` when ``item``
    is merged into it: a "merged" MemoryItemSupport row and a "merged-in"
    version on ``into``'s history naming ``item`` and ``author``. The caller
    holds ``into``'s row lock."""
    support = _support_of(
        item, item=into, kind=SupportKind.MERGED, similarity=similarity, merged_item=item, author=author
    )
    note = f"“{item.title}” ({item.public_id}) was merged into this item; its text is kept as supporting evidence."
    _support_add(item=into, support=support, action="merged-in", note=note, author=author)
