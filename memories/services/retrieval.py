"""Retrieval: what a bank serves an agent for a query (the playground's
preview), and the logged retrieval with its holdout arm."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import ApiToken, Bank, RetrievalMode
from memories.embeddings import embed_text
from memories.models import Arm, MemoryItem, RetrievalEvent
from memories.selectors.retrieval import (
    MAX_K,
    approved_items_search,
    embedding_counts,
    experiences_search,
    system_block_render,
)
from reasoningbank_site.errors import Invalid


@dataclass
class RetrievalResult:
    items: list[tuple[MemoryItem, float]]
    system_block: str
    pending_embeddings: int
    mode: str
    k: int
    latency_ms: float
    bank_has_approved: bool = field(default=True)
    arm: str = field(default=Arm.TREATMENT)
    event: RetrievalEvent | None = None  # None for a preview


def retrieval_preview(*, bank: Bank, query: str, k: int | None = None, task_id: str = "") -> RetrievalResult:
    """What an agent of ``bank`` would be served for ``query`` (treatment
    arm), without logging or counting anything — the playground's view and
    the first half of retrieval_perform. Items mode: the top-k approved
    items by similarity to the query; experiences mode: all approved items
    of the top-n most similar past tasks. ``k`` defaults to bank.top_k and
    is capped at MAX_K; bank.min_similarity applies; a ``task_id`` excludes
    what was learnt from that same task. Raises Invalid for an empty query
    (and EmbeddingModelError when the model cannot be loaded)."""
    started = time.perf_counter()
    query = (query or "").strip()
    if not query:
        raise Invalid("The query is empty.")
    k = min(max(int(k if k is not None else bank.top_k), 1), MAX_K)
    vector = embed_text(query)
    if bank.retrieval_mode == RetrievalMode.EXPERIENCES:
        pairs = experiences_search(
            bank=bank, vector=vector, n=k, min_similarity=bank.min_similarity, exclude_task_id=task_id or ""
        )
    else:
        pairs = approved_items_search(
            bank=bank, vector=vector, k=k, min_similarity=bank.min_similarity, exclude_task_id=task_id or ""
        )
    counts = embedding_counts(bank=bank)
    return RetrievalResult(
        items=pairs,
        system_block=system_block_render([item for item, _ in pairs]),
        pending_embeddings=counts.pending,
        bank_has_approved=counts.has_approved,
        mode=bank.retrieval_mode,
        k=k,
        latency_ms=(time.perf_counter() - started) * 1000.0,
    )


def retrieval_perform(
    *, bank: Bank, query: str, k: int | None = None, task_id: str = "", token: ApiToken | None = None
) -> RetrievalResult:
    """Answer an agent's retrieval (see retrieval_preview) and log it. With
    probability bank.holdout_fraction the retrieval is in the holdout arm:
    nothing is served, but the event records what would have been, so lift
    can be measured. Writes one RetrievalEvent and bumps the served items'
    counters with one query. Raises as retrieval_preview does."""
    started = time.perf_counter()
    result = retrieval_preview(bank=bank, query=query, k=k, task_id=task_id)
    recorded = [{"id": str(item.public_id), "score": score} for item, score in result.items]
    if bank.holdout_fraction > 0 and random.random() < bank.holdout_fraction:
        result.arm, result.items, result.system_block = Arm.HOLDOUT, [], ""
    now = timezone.now()
    result.latency_ms = (time.perf_counter() - started) * 1000.0
    with transaction.atomic():
        result.event = RetrievalEvent.objects.create(
            bank=bank,
            token=token,
            query=query.strip(),
            task_id=task_id or "",
            mode=result.mode,
            k=result.k,
            arm=result.arm,
            results=recorded,
            latency_ms=round(result.latency_ms, 2),
        )
        if result.items:
            MemoryItem.objects.filter(pk__in=[item.pk for item, _ in result.items]).update(
                served_count=F("served_count") + 1, last_served_at=now
            )
    for item, _ in result.items:
        item.served_count += 1
        item.last_served_at = now
    return result
