"""How a bank learns after it serves, by sub-domain: ``policy`` (the bank's
learning policy), ``refusals`` (reopen a refused item, archive one as wrong),
``validity`` (expiry and staleness), ``retirement`` (Impact's per-item
effects written on items, retirement proposals, suspension, supersede)."""

from memories.services.learning.policy import BANK_LEARNING_SETTINGS, bank_learning_update
from memories.services.learning.refusals import memory_item_archive_as_wrong, memory_item_reopen
from memories.services.learning.retirement import (
    ItemEffect,
    memory_item_retirement_keep,
    memory_item_supersede_with,
    memory_items_outcomes_record,
)
from memories.services.learning.validity import (
    approval_lifecycle,
    items_environment_observe,
    memory_item_stale_clear,
    memory_item_validity_set,
)

__all__ = [
    "BANK_LEARNING_SETTINGS",
    "ItemEffect",
    "approval_lifecycle",
    "bank_learning_update",
    "items_environment_observe",
    "memory_item_archive_as_wrong",
    "memory_item_reopen",
    "memory_item_retirement_keep",
    "memory_item_stale_clear",
    "memory_item_supersede_with",
    "memory_item_validity_set",
    "memory_items_outcomes_record",
]
