"""Keeping items searchable: the inline embed, the embed enqueued after a
write, the worker's compare-and-set refresh and the sweeper for lost ones."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Q

from memories.embedding.model import (
    embed_text,
    embed_texts,
    embedding_hash,
    embedding_model_name,
    item_embedding_hash,
    item_embedding_text,
)
from memories.items.models import ItemStatus, MemoryItem
from memories.items.near_duplicates import NEAR_DUPLICATE_LIMIT, near_duplicates_search
from reasoningbank_site.celery import enqueue_on_commit

log = logging.getLogger(__name__)


def item_embedding_is_current(item: MemoryItem) -> bool:
    """Whether the item's vector is of its present text, by the configured model."""
    return (
        item.embedding is not None
        and item.embedding_model == embedding_model_name()
        and item.embedding_hash == item_embedding_hash(item)
    )


def item_embed_inline(item: MemoryItem) -> list[str]:
    """Compute the item's embedding in place (not saved); returns the fields to save."""
    return items_embed_inline([item])


def items_embed_inline(items: list[MemoryItem]) -> list[str]:
    """item_embed_inline for several items with one model call (the model
    embeds a batch for little more than one text); returns the fields to save."""
    texts = [item_embedding_text(title=i.title, description=i.description, content=i.content) for i in items]
    model = embedding_model_name()
    for item, text, vector in zip(items, texts, embed_texts(texts), strict=True):
        item.embedding = vector
        item.embedding_hash = embedding_hash(text)
        item.embedding_model = model
    return ["embedding", "embedding_hash", "embedding_model"]


def item_embed_enqueue(item_pk: int) -> None:
    """Ask a worker to embed the item once the current transaction commits.
    A broker outage must not fail the write: the item stays visible as a
    pending embedding (not served until embedded; the embed sweeper catches it)."""
    enqueue_on_commit("memories.embed_item", item_pk)


def memory_item_embed_refresh(*, item_id: int) -> bool:
    """Embed item ``item_id`` if its embedding is missing or stale. Returns
    True when it wrote an embedding, False when there was nothing to do (no
    such item, or already current). The write is a compare-and-set on the
    text that was embedded, so an edit racing with this never ends up with
    the old text's vector. Not atomic on purpose: no transaction is held
    open while the model runs. Raises EmbeddingModelError when the model
    cannot be loaded."""
    item = MemoryItem.objects.filter(pk=item_id).first()
    if item is None or item_embedding_is_current(item):
        return False
    text = item_embedding_text(title=item.title, description=item.description, content=item.content)
    vector = embed_text(text)
    updated = MemoryItem.objects.filter(
        pk=item.pk, title=item.title, description=item.description, content=item.content
    ).update(embedding=vector, embedding_hash=embedding_hash(text), embedding_model=embedding_model_name())
    if updated and item.status == ItemStatus.PROPOSED:
        item.embedding = vector
        near_duplicates_refresh(item=item)
    return bool(updated)


@transaction.atomic
def near_duplicates_refresh(*, item: MemoryItem) -> list[dict]:
    """Record ``item``'s near-duplicates by the one detector the proposal and the
    approval check use (``near_duplicates_search``), for an item embedded after
    it was written (by hand, imported, edited); the proposed items found name it
    back, so each twin shows the other on its page and in the queue's filter.
    Returns the suggestions stored on ``item``."""
    found = near_duplicates_search(bank=item.bank, vector=item.embedding, exclude_pk=item.pk)
    MemoryItem.objects.filter(pk=item.pk).update(near_duplicates=found)
    item.near_duplicates = found
    me = str(item.public_id)
    for other in MemoryItem.objects.select_for_update().filter(
        bank_id=item.bank_id, status=ItemStatus.PROPOSED, public_id__in=[d["id"] for d in found]
    ):
        entries = [d for d in other.near_duplicates or [] if not (isinstance(d, dict) and d.get("id") == me)]
        similarity = next(d["similarity"] for d in found if d["id"] == str(other.public_id))
        entries.append({"id": me, "title": item.title, "similarity": similarity})
        entries.sort(key=lambda d: -float(d.get("similarity") or 0))
        other.near_duplicates = entries[:NEAR_DUPLICATE_LIMIT]
        other.save(update_fields=["near_duplicates"])
    return found


def memory_items_embed_pending(*, limit: int = 200) -> int:
    """Sweeper: embed proposed and approved items that have no current
    embedding (an enqueue lost to a broker outage, a crashed worker, or a
    change of RB_EMBEDDING_MODEL), oldest change first, at most ``limit``.
    Returns how many embeddings were written. Safe to run concurrently
    (each write is a compare-and-set)."""
    model = embedding_model_name()
    pending = (
        MemoryItem.objects.filter(status__in=[ItemStatus.PROPOSED, ItemStatus.APPROVED])
        .filter(Q(embedding_hash="") | Q(embedding_model__lt=model) | Q(embedding_model__gt=model))
        .order_by("updated_at")
        .values_list("pk", flat=True)[: max(0, int(limit))]
    )
    return sum(memory_item_embed_refresh(item_id=pk) for pk in list(pending))
