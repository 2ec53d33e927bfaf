"""What agents are served: the vector search over approved items and
experiences (``search``, with its index scan's settings in ``scan`` and its
``filters``), the near-duplicate search behind proposals
(``near_duplicates``), and the system block
(``served``)."""

from memories.selectors.retrieval.filters import NO_FILTERS, RetrievalFilters
from memories.selectors.retrieval.near_duplicates import (
    NEAR_DUPLICATE_LIMIT,
    NEAR_DUPLICATE_SIMILARITY,
    near_duplicates_search,
    near_duplicates_search_many,
    vector_literal,
)
from memories.selectors.retrieval.scan import (
    HNSW_EF_SEARCH,
    HNSW_EF_SEARCH_FILTERED,
    hnsw_ef_search,
    hnsw_iterative_scan,
    hnsw_scan,
    hnsw_session_settings,
)
from memories.selectors.retrieval.search import (
    MAX_K,
    SEARCH_ORDER,
    SERVED_FIELDS,
    EmbeddingCounts,
    any_items_search,
    approved_items_search,
    approved_items_search_counted,
    embedding_counts,
    experiences_search,
)
from memories.selectors.retrieval.served import (
    SYSTEM_BLOCK_VERSION,
    run_retrievals,
    system_block_preamble,
    system_block_render,
)

__all__ = [
    "HNSW_EF_SEARCH",
    "HNSW_EF_SEARCH_FILTERED",
    "MAX_K",
    "NEAR_DUPLICATE_LIMIT",
    "NEAR_DUPLICATE_SIMILARITY",
    "NO_FILTERS",
    "SEARCH_ORDER",
    "SERVED_FIELDS",
    "SYSTEM_BLOCK_VERSION",
    "EmbeddingCounts",
    "RetrievalFilters",
    "any_items_search",
    "approved_items_search",
    "approved_items_search_counted",
    "embedding_counts",
    "experiences_search",
    "hnsw_ef_search",
    "hnsw_iterative_scan",
    "hnsw_scan",
    "hnsw_session_settings",
    "near_duplicates_search",
    "near_duplicates_search_many",
    "run_retrievals",
    "system_block_preamble",
    "system_block_render",
    "vector_literal",
]
