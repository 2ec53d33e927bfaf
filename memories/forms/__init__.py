"""The memories app's forms: the review queue and items (items), the per-bank policies (policies)."""

from memories.forms.items import (
    AssignmentForm,
    BulkActionForm,
    ImportForm,
    ItemCreateForm,
    ItemEditForm,
    ItemListFilterForm,
    LifecycleActionForm,
    MergeForm,
    PlaygroundForm,
    RejectForm,
    ReviewFilterForm,
)
from memories.forms.policies import BankLearningForm, ReviewPolicyForm, TrustPolicyForm, UndoSinceForm

__all__ = [
    "AssignmentForm",
    "BankLearningForm",
    "BulkActionForm",
    "ImportForm",
    "ItemCreateForm",
    "ItemEditForm",
    "ItemListFilterForm",
    "LifecycleActionForm",
    "MergeForm",
    "PlaygroundForm",
    "RejectForm",
    "ReviewFilterForm",
    "ReviewPolicyForm",
    "TrustPolicyForm",
    "UndoSinceForm",
]
