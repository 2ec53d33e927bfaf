"""Writes of the memories app, one module per sub-domain. ``items`` makes an
item (propose, create, edit); ``decisions`` moves its status (approve, reject,
archive, supersede, flag, merge, keep both); ``reverts`` takes a decision back (undo, revert); ``transitions`` owns the status table every status move goes
through; ``versions`` owns the row lock and the version + audit record each
change appends; ``embedding`` keeps items searchable (inline embed, enqueue,
refresh, sweeper); ``duplicates`` records supporting evidence (a lesson
distilled again, an item merged in) on the item that holds it; ``imports``
turns uploaded records into proposed items; ``experiences`` owns past tasks;
``retrieval`` answers (and logs) what an agent is served, holdout arm included
(a package: ``preview``, ``logged``, ``ranking``, ``upkeep``); ``learning`` is what
follows serving (refused lessons, validity and staleness, retirement, the bank's
learning policy), imported from ``memories.services.learning``; ``impact_tallies`` keeps the Impact report's sums; ``collaboration``
holds several reviewers together (the version check of a decision, presence, queue slices). Refusals are domain errors
(``reasoningbank_site.errors``)."""

from memories.services.collaboration import (
    item_current_version,
    item_version_check,
    review_assignment_create,
    review_assignment_delete,
    review_presence_touch,
)
from memories.services.decisions import (
    memory_item_approve,
    memory_item_archive,
    memory_item_flag,
    memory_item_keep_both,
    memory_item_merge,
    memory_item_reject,
    memory_item_supersede,
)
from memories.services.duplicates import (
    memory_item_support_merged,
    memory_item_support_record,
    memory_items_support_record,
)
from memories.services.embedding import memory_item_embed_refresh, memory_items_embed_pending
from memories.services.experiences import experience_create
from memories.services.impact_tallies import (
    retrieval_outcome_change,
    retrieval_outcomes_apply,
    retrieval_tallies_compact,
    retrieval_tallies_rebuild,
    retrievals_lock_for_outcomes,
)
from memories.services.imports import IMPORT_MAX_ITEMS, ImportReport, memory_items_import
from memories.services.items import (
    ProposedItem,
    memory_item_create,
    memory_item_edit,
    memory_item_propose,
    memory_items_propose,
)
from memories.services.retrieval import (
    RetrievalResult,
    memory_items_count_served,
    retrieval_perform,
    retrieval_preview,
    retrieval_warm_up,
)
from memories.services.reverts import memory_item_last_decision, memory_item_revert
from memories.services.risks import (
    item_risks_pending,
    memory_item_findings_add,
    memory_item_risk_rescan,
    memory_item_risks_confirm,
    memory_items_risk_scan,
)
from memories.services.transitions import ITEM_REVERTS, ITEM_TRANSITIONS, item_status_move
from memories.services.trust import (
    auto_approval_audit,
    auto_approvals_undo,
    bank_trust_policy_update,
    memory_items_auto_approve,
    memory_items_screen,
)

__all__ = [
    "IMPORT_MAX_ITEMS",
    "ITEM_REVERTS",
    "ITEM_TRANSITIONS",
    "ImportReport",
    "ProposedItem",
    "RetrievalResult",
    "auto_approval_audit",
    "auto_approvals_undo",
    "bank_trust_policy_update",
    "experience_create",
    "item_current_version",
    "item_risks_pending",
    "item_status_move",
    "item_version_check",
    "memory_item_approve",
    "memory_item_archive",
    "memory_item_create",
    "memory_item_edit",
    "memory_item_embed_refresh",
    "memory_item_findings_add",
    "memory_item_flag",
    "memory_item_keep_both",
    "memory_item_last_decision",
    "memory_item_merge",
    "memory_item_propose",
    "memory_item_reject",
    "memory_item_revert",
    "memory_item_risk_rescan",
    "memory_item_risks_confirm",
    "memory_item_supersede",
    "memory_item_support_merged",
    "memory_item_support_record",
    "memory_items_auto_approve",
    "memory_items_count_served",
    "memory_items_embed_pending",
    "memory_items_import",
    "memory_items_propose",
    "memory_items_risk_scan",
    "memory_items_screen",
    "memory_items_support_record",
    "retrieval_outcome_change",
    "retrieval_outcomes_apply",
    "retrieval_perform",
    "retrieval_preview",
    "retrieval_tallies_compact",
    "retrieval_tallies_rebuild",
    "retrieval_warm_up",
    "retrievals_lock_for_outcomes",
    "review_assignment_create",
    "review_assignment_delete",
    "review_presence_touch",
]
