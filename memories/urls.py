from django.urls import path

from memories import views, views_reviewers

app_name = "memories"
ITEM = "banks/<uuid:bank_id>/items/<uuid:item_id>/"
urlpatterns = [
    path("banks/<uuid:bank_id>/review/", views.review, name="review"),
    path("banks/<uuid:bank_id>/review/<uuid:item_id>/", views.review_focus, name="review_focus"),
    path("banks/<uuid:bank_id>/items/", views.items, name="items"),
    path("banks/<uuid:bank_id>/items/new/", views.item_create, name="item_create"),
    path("banks/<uuid:bank_id>/items/export.jsonl", views.items_export, name="items_export"),
    path("banks/<uuid:bank_id>/items/import/", views.items_import, name="items_import"),
    path(ITEM, views.item_detail, name="item_detail"),
    # The item page's actions (POST only; the focus view posts focus=1 to move on after a decision)
    path(ITEM + "edit/", views.item_edit, name="item_edit"),
    path(ITEM + "approve/", views.item_approve, name="item_approve"),
    path(ITEM + "reject/", views.item_reject, name="item_reject"),
    path(ITEM + "archive/", views.item_archive, name="item_archive"),
    path(ITEM + "merge/", views.item_merge, name="item_merge"),
    path(ITEM + "keep-both/", views.item_keep_both, name="item_keep_both"),
    path(ITEM + "compare/<uuid:other_id>/", views.item_compare, name="item_compare"),
    path(ITEM + "revert/", views.item_revert, name="item_revert"),
    path("banks/<uuid:bank_id>/playground/", views.playground, name="playground"),
    # Several reviewers: the focus view's presence heartbeat, slices of the queue given to reviewers
    path(
        "banks/<uuid:bank_id>/review/<uuid:item_id>/presence/", views_reviewers.review_presence, name="review_presence"
    ),
    path("banks/<uuid:bank_id>/review/assignments/", views_reviewers.review_assignments, name="review_assignments"),
    path(
        "banks/<uuid:bank_id>/review/assignments/<uuid:assignment_id>/remove/",
        views_reviewers.review_assignment_remove,
        name="review_assignment_remove",
    ),
]
