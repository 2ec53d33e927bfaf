"""Retrieval, by sub-domain: ``preview`` (what a bank serves for a query, the
playground's view), ``logged`` (the logged retrieval: holdout arm, per-item
randomisation, step-level runs) and ``upkeep`` (the warm-up and the fold of
served counts)."""

from memories.services.retrieval.logged import retrieval_perform
from memories.services.retrieval.preview import RetrievalResult, retrieval_preview
from memories.services.retrieval.upkeep import memory_items_count_served, retrieval_warm_up

__all__ = [
    "RetrievalResult",
    "memory_items_count_served",
    "retrieval_perform",
    "retrieval_preview",
    "retrieval_warm_up",
]
