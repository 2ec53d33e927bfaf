"""Reads of the memories app, one module per reader. ``retrieval`` owns what
agents are served (vector search over approved items and experiences, the
near-duplicate search, the system block);
``review`` owns the review pages' reads (queue, item list and counts, one item
with its near-duplicates, history and source trajectories); ``export`` owns the
JSON Lines exports (ours, and the `reasoning-bank` library's format); ``skills`` the approved
lessons for the Agent Skills and AGENTS.md files; ``duplicates`` owns an item's
supporting evidence, the approval's duplicate check and the side-by-side comparison; ``learning`` (imported
from ``memories.selectors.learning``) the bank's learning policy and the lifecycle states. Writes live in
``memories.services``."""

from memories.selectors.auto_approval import (
    audit_sample_pending,
    auto_approval_held_back,
    auto_approval_stats,
    rejected_twin_exists,
)
from memories.selectors.duplicates import (
    Comparison,
    approved_duplicates,
    item_supports,
    items_compare,
    supports_trajectory_ids,
)
from memories.selectors.export import (
    EXPORT_FIELDS,
    REASONING_BANK_FIELDS,
    REASONING_BANK_SOURCES,
    memory_items_export,
)
from memories.selectors.retrieval import (
    HNSW_EF_SEARCH,
    HNSW_EF_SEARCH_FILTERED,
    MAX_K,
    NEAR_DUPLICATE_LIMIT,
    NEAR_DUPLICATE_SIMILARITY,
    NO_FILTERS,
    SYSTEM_BLOCK_VERSION,
    EmbeddingCounts,
    RetrievalFilters,
    any_items_search,
    approved_items_search,
    approved_items_search_counted,
    embedding_counts,
    experiences_search,
    hnsw_ef_search,
    hnsw_iterative_scan,
    near_duplicates_search,
    near_duplicates_search_many,
    run_retrievals,
    system_block_preamble,
    system_block_render,
)
from memories.selectors.review import (
    LIST_FIELDS,
    ItemSources,
    NearDuplicate,
    VersionView,
    item_for_bank,
    item_history,
    item_list,
    item_near_duplicates,
    item_sources,
    item_status_counts,
    items_by_public_ids,
    queue_rows_claimed,
    review_agents,
    review_queue,
)
from memories.selectors.risks import (
    has_unconfirmed_risks,
    item_risks,
    risk_counts,
    risk_label,
    risk_out,
    unconfirmed_risk_count,
)
from memories.selectors.skills import BankLessons, bank_lessons
from memories.selectors.trust import bank_policy_q, bank_trust_policy, item_tier, tier_name, tier_q

__all__ = [
    "EXPORT_FIELDS",
    "HNSW_EF_SEARCH",
    "HNSW_EF_SEARCH_FILTERED",
    "LIST_FIELDS",
    "MAX_K",
    "NEAR_DUPLICATE_LIMIT",
    "NEAR_DUPLICATE_SIMILARITY",
    "NO_FILTERS",
    "REASONING_BANK_FIELDS",
    "REASONING_BANK_SOURCES",
    "SYSTEM_BLOCK_VERSION",
    "BankLessons",
    "Comparison",
    "EmbeddingCounts",
    "ItemSources",
    "NearDuplicate",
    "RetrievalFilters",
    "VersionView",
    "any_items_search",
    "approved_duplicates",
    "approved_items_search",
    "approved_items_search_counted",
    "audit_sample_pending",
    "auto_approval_held_back",
    "auto_approval_stats",
    "bank_lessons",
    "bank_policy_q",
    "bank_trust_policy",
    "embedding_counts",
    "experiences_search",
    "has_unconfirmed_risks",
    "hnsw_ef_search",
    "hnsw_iterative_scan",
    "item_for_bank",
    "item_history",
    "item_list",
    "item_near_duplicates",
    "item_risks",
    "item_sources",
    "item_status_counts",
    "item_supports",
    "item_tier",
    "items_by_public_ids",
    "items_compare",
    "memory_items_export",
    "near_duplicates_search",
    "near_duplicates_search_many",
    "queue_rows_claimed",
    "rejected_twin_exists",
    "review_agents",
    "review_queue",
    "risk_counts",
    "risk_label",
    "risk_out",
    "run_retrievals",
    "supports_trajectory_ids",
    "system_block_preamble",
    "system_block_render",
    "tier_name",
    "tier_q",
    "unconfirmed_risk_count",
]
