"""Reads of the memories app, one module per reader. ``retrieval`` owns what
agents are served (vector search over approved items and experiences, the
near-duplicate search, the approved lists of the agent API, the system block);
``review`` owns the review pages' reads (queue, item list and counts, one item
with its near-duplicates, history and source trajectories); ``export`` owns the
JSON Lines export. Writes live in ``memories.services``."""

from memories.selectors.export import EXPORT_FIELDS, memory_items_export
from memories.selectors.retrieval import (
    HNSW_EF_SEARCH,
    MAX_K,
    NEAR_DUPLICATE_LIMIT,
    NEAR_DUPLICATE_SIMILARITY,
    NO_FILTERS,
    SYSTEM_BLOCK_VERSION,
    EmbeddingCounts,
    RetrievalFilters,
    approved_item_get,
    approved_items_list,
    approved_items_search,
    embedding_counts,
    experiences_search,
    hnsw_iterative_scan,
    near_duplicates_search,
    near_duplicates_search_many,
    system_block_preamble,
    system_block_render,
)
from memories.selectors.review import (
    LIST_FIELDS,
    NearDuplicate,
    VersionView,
    item_for_bank,
    item_history,
    item_list,
    item_near_duplicates,
    item_source_trajectory_ids,
    item_status_counts,
    items_by_public_ids,
    review_agents,
    review_queue,
)

__all__ = [
    "EXPORT_FIELDS",
    "HNSW_EF_SEARCH",
    "LIST_FIELDS",
    "MAX_K",
    "NEAR_DUPLICATE_LIMIT",
    "NEAR_DUPLICATE_SIMILARITY",
    "NO_FILTERS",
    "SYSTEM_BLOCK_VERSION",
    "EmbeddingCounts",
    "NearDuplicate",
    "RetrievalFilters",
    "VersionView",
    "approved_item_get",
    "approved_items_list",
    "approved_items_search",
    "embedding_counts",
    "experiences_search",
    "hnsw_iterative_scan",
    "item_for_bank",
    "item_history",
    "item_list",
    "item_near_duplicates",
    "item_source_trajectory_ids",
    "item_status_counts",
    "items_by_public_ids",
    "memory_items_export",
    "near_duplicates_search",
    "near_duplicates_search_many",
    "review_agents",
    "review_queue",
    "system_block_preamble",
    "system_block_render",
]
