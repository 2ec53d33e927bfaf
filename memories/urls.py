from django.urls import path

from memories.items import import_export_views as import_export
from memories.items import views as items
from memories.learning import settings_views as learning_settings
from memories.learning import views as lifecycle
from memories.review.views import (
    assignments,
    guidelines,
    item,
    item_actions,
    policy,
    presence,
    queue,
    saved_views,
    seats,
)
from memories.serving import views as playground
from memories.trust import views as trust

app_name = "memories"
ITEM = "banks/<uuid:bank_id>/items/<uuid:item_id>/"
urlpatterns = [
    path("banks/<uuid:bank_id>/review/", queue.review, name="review"),
    path("banks/<uuid:bank_id>/review/<uuid:item_id>/", item.review_focus, name="review_focus"),
    path("banks/<uuid:bank_id>/review/policy/", policy.review_policy, name="review_policy"),
    path("banks/<uuid:bank_id>/review/claim/", seats.review_claim_batch, name="review_claim_batch"),
    path("banks/<uuid:bank_id>/review/<uuid:item_id>/claim/", seats.review_claim_item, name="review_claim_item"),
    path("banks/<uuid:bank_id>/review/<uuid:item_id>/release/", seats.review_release_item, name="review_release_item"),
    path("banks/<uuid:bank_id>/review/views/", saved_views.saved_view_create, name="saved_view_create"),
    path("banks/<uuid:bank_id>/review/guidelines/fold/", guidelines.guidelines_fold, name="guidelines_fold"),
    path("banks/<uuid:bank_id>/review/views/delete/", saved_views.saved_view_remove, name="saved_view_remove"),
    path("banks/<uuid:bank_id>/items/", items.items, name="items"),
    path("banks/<uuid:bank_id>/items/new/", items.item_create, name="item_create"),
    path("banks/<uuid:bank_id>/items/export.jsonl", import_export.items_export, name="items_export"),
    path("banks/<uuid:bank_id>/items/import/", import_export.items_import, name="items_import"),
    path("banks/<uuid:bank_id>/items/skills/<str:filename>", import_export.items_skills, name="items_skills"),
    path(ITEM, item.item_detail, name="item_detail"),
    # The item page's actions (POST only; the focus view posts focus=1 to move on after a decision)
    path(ITEM + "edit/", item_actions.item_edit, name="item_edit"),
    path(ITEM + "approve/", item_actions.item_approve, name="item_approve"),
    path(ITEM + "reject/", item_actions.item_reject, name="item_reject"),
    path(ITEM + "archive/", item_actions.item_archive, name="item_archive"),
    path(ITEM + "merge/", item_actions.item_merge, name="item_merge"),
    path(ITEM + "keep-both/", item_actions.item_keep_both, name="item_keep_both"),
    path(ITEM + "compare/<uuid:other_id>/", item.item_compare, name="item_compare"),
    path(ITEM + "revert/", item_actions.item_revert, name="item_revert"),
    path(ITEM + "lifecycle/", lifecycle.item_lifecycle, name="item_lifecycle"),
    path("banks/<uuid:bank_id>/playground/", playground.playground, name="playground"),
    path("banks/<uuid:bank_id>/learning/", learning_settings.bank_learning_settings, name="bank_learning"),
    path("banks/<uuid:bank_id>/trust/", trust.trust, name="trust"),
    path("banks/<uuid:bank_id>/trust/audit/<uuid:item_id>/", trust.trust_audit, name="trust_audit"),
    path("banks/<uuid:bank_id>/trust/undo/", trust.trust_undo, name="trust_undo"),
    # Several reviewers: the focus view's presence heartbeat, slices of the queue given to reviewers
    path("banks/<uuid:bank_id>/review/<uuid:item_id>/presence/", presence.review_presence, name="review_presence"),
    path("banks/<uuid:bank_id>/review/assignments/", assignments.review_assignments, name="review_assignments"),
    path(
        "banks/<uuid:bank_id>/review/assignments/<uuid:assignment_id>/remove/",
        assignments.review_assignment_remove,
        name="review_assignment_remove",
    ),
]
