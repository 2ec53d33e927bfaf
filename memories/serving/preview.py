"""What a bank serves an agent for a query, without logging anything: the
playground's preview and the first half of a logged retrieval."""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from accounts.models import Bank, RetrievalMode
from memories.embedding.model import embed_text
from memories.items.models import MemoryItem
from memories.learning.models import BankLearning
from memories.learning.selectors import bank_learning
from memories.serving import NO_FILTERS, RetrievalFilters
from memories.serving.models import Arm, RetrievalEvent
from memories.serving.search import MAX_K, approved_items_search_counted, embedding_counts, experiences_search
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


def ranking_candidates(k: int) -> int:
    """How many semantic candidates phase one fetches for ``k`` served when
    ranking is on: half as many again (at least 2 more). A utility moves a
    score by at most the weight times the effect, so items far below the
    k-th similarity cannot climb in; more candidates only cost search time."""
    return k + max(2, k // 2)


@dataclass(frozen=True)
class ScoreParts:
    """Why an item was served where it was: its cosine ``similarity`` to the
    query, its ``utility`` (shrunk effect), the judged retrievals ``n`` behind
    it, and the ``score`` the order follows (the similarity when ranking is off)."""

    similarity: float
    utility: float
    n: int
    score: float


def item_utility(*, effect: float | None, n: int, prior: int) -> float:
    """``effect`` · n / (n + prior): 0 with no observation, half the measured
    effect at ``prior`` observations, the whole effect as n grows."""
    if effect is None or n <= 0:
        return 0.0
    return effect * n / (n + prior)


# A bank that does not rank: its items' utility is shown with the default shrinkage, and weighs nothing.
_NOT_RANKING = BankLearning(utility_weight=0.0)


def score_parts(pairs: list[tuple[MemoryItem, float]], *, bank: Bank) -> None:
    """Set ``score_parts`` (ScoreParts) on each item of ``pairs`` (item,
    similarity). Reads the bank's learning policy (one query) only when it
    ranks by utility."""
    learning = bank_learning(bank=bank) if bank.utility_ranking and pairs else _NOT_RANKING
    weight = learning.utility_weight if bank.utility_ranking else 0.0
    for item, similarity in pairs:
        n = item.outcome_n or 0
        utility = round(item_utility(effect=item.outcome_effect, n=n, prior=learning.utility_prior), 4)
        item.score_parts = ScoreParts(
            similarity=similarity, utility=utility, n=n, score=round(similarity + weight * utility, 4)
        )


def ranked(pairs: list[tuple[MemoryItem, float]], *, bank: Bank) -> list[tuple[MemoryItem, float]]:
    """``pairs`` with their score parts, in the order the bank serves them:
    by score, best first, when utility ranking is on (ties keep the
    similarity order: a stable sort), as given otherwise."""
    score_parts(pairs, bank=bank)
    if not bank.utility_ranking:
        return pairs
    return sorted(pairs, key=lambda pair: -pair[0].score_parts.score)


SYSTEM_BLOCK_VERSION = "system_block_v2"


# A lesson cannot open or close the tags that delimit lessons (it is data, not a message to the agent).
_LESSON_TAG = re.compile(r"<(\s*/?\s*)(lesson)\b", re.IGNORECASE)


_PROMPTS = Path(__file__).resolve().parents[1] / "prompts"


@lru_cache(maxsize=4)
def system_block_preamble(version: str = SYSTEM_BLOCK_VERSION) -> str:
    return (_PROMPTS / f"{version}.txt").read_text(encoding="utf-8").strip()


def system_block_render(items: list[MemoryItem], *, version: str = SYSTEM_BLOCK_VERSION) -> str:
    """The text an agent puts in its system prompt: the preamble (which frames
    the lessons as data), then each item as ``## title`` / description /
    content between ``<lesson>`` and ``</lesson>`` (tags inside an item's text
    are defused). Empty when no items."""
    if not items:
        return ""
    parts = [system_block_preamble(version)]
    for item in items:
        text = _LESSON_TAG.sub(
            r"&lt;\1\2", f"## {item.title.strip()}\n{item.description.strip()}\n{item.content.strip()}"
        )
        parts.append(f"<lesson>\n{text}\n</lesson>")
    return "\n\n".join(parts)
