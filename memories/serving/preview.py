"""What a bank serves an agent for a query, without logging anything: the
playground's preview and the first half of a logged retrieval."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from accounts.models import Bank, RetrievalMode
from memories.embedding.model import embed_text
from memories.items.models import MemoryItem
from memories.serving.filters import NO_FILTERS, RetrievalFilters
from memories.serving.models import Arm, RetrievalEvent
from memories.serving.ranking import ranked, ranking_candidates, score_parts
from memories.serving.search import MAX_K, approved_items_search_counted, embedding_counts, experiences_search
from memories.serving.served import system_block_render
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
    withheld: list[MemoryItem] = field(default_factory=list)  # left out by per-item randomisation
    run_id: uuid.UUID | None = None  # a later step of a run: the public id of the run's first retrieval
    release: int | None = None  # the number of the bank's release served (None: the bank has none yet)


def retrieval_preview(
    *,
    bank: Bank,
    query: str,
    k: int | None = None,
    task_id: str = "",
    filters: RetrievalFilters = NO_FILTERS,
    exclude: frozenset[str] = frozenset(),
    release: int | None = None,
) -> RetrievalResult:
    """What an agent of ``bank`` would be served for ``query`` (treatment
    arm), without logging or counting anything — the playground's view and
    the first half of retrieval_perform. Items mode: the top-k approved
    items by similarity to the query; experiences mode: all approved items
    of the top-n most similar past tasks. ``k`` defaults to bank.top_k and
    is capped at MAX_K; bank.min_similarity applies; a ``task_id`` excludes
    what was learnt from that same task; ``filters`` (tags, source agent,
    source metadata) narrow what may be served inside the vector search; no two
    items at or above bank.duplicate_threshold are served together (the better
    one stays, the next candidates fill up to k); items whose public id is in
    ``exclude`` are never served (items mode: the next candidates fill up to k,
    within MAX_K). With the bank's utility ranking on (items mode), ranking_candidates(k)
    candidates are fetched and the top k by similarity blended with utility
    are served (``ranked``); every served item carries its ``score_parts``.
    With ``release`` (a number), that release of the bank is served instead
    of the approved set, each item with its text as released.
    Raises Invalid for an empty query (and EmbeddingModelError when the model
    cannot be loaded)."""
    started = time.perf_counter()
    query = (query or "").strip()
    if not query:
        raise Invalid("The query is empty.")
    k = min(max(int(k if k is not None else bank.top_k), 1), MAX_K)
    vector = embed_text(query)
    if bank.retrieval_mode == RetrievalMode.EXPERIENCES:
        pairs = experiences_search(
            bank=bank,
            vector=vector,
            n=k,
            min_similarity=bank.min_similarity,
            exclude_task_id=task_id or "",
            filters=filters,
            duplicate_threshold=bank.duplicate_threshold,
            release=release,
        )
        counts = embedding_counts(bank=bank)
    else:
        candidates = ranking_candidates(k) if bank.utility_ranking else k
        pairs, counts = approved_items_search_counted(
            bank=bank,
            vector=vector,
            k=candidates + len(exclude),
            min_similarity=bank.min_similarity,
            exclude_task_id=task_id or "",
            filters=filters,
            duplicate_threshold=bank.duplicate_threshold,
            release=release,
        )
    if exclude:
        pairs = [(item, score) for item, score in pairs if str(item.public_id) not in exclude]
    if bank.retrieval_mode == RetrievalMode.EXPERIENCES:
        score_parts(pairs, bank=bank)  # an experience's items keep its order
    else:
        pairs = ranked(pairs, bank=bank)[:k]
    return RetrievalResult(
        items=pairs,
        system_block=system_block_render([item for item, _ in pairs]),
        pending_embeddings=counts.pending,
        bank_has_approved=counts.has_approved,
        mode=bank.retrieval_mode,
        k=k,
        latency_ms=(time.perf_counter() - started) * 1000.0,
    )
