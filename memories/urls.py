from django.urls import path

from memories import views

app_name = "memories"
urlpatterns = [
    path("banks/<uuid:bank_id>/review/", views.review, name="review"),
    path("banks/<uuid:bank_id>/review/<uuid:item_id>/", views.review_focus, name="review_focus"),
    path("banks/<uuid:bank_id>/items/", views.items, name="items"),
    path("banks/<uuid:bank_id>/items/new/", views.item_create, name="item_create"),
    path("banks/<uuid:bank_id>/items/export.jsonl", views.items_export, name="items_export"),
    path("banks/<uuid:bank_id>/items/import/", views.items_import, name="items_import"),
    path("banks/<uuid:bank_id>/items/<uuid:item_id>/", views.item_detail, name="item_detail"),
    path("banks/<uuid:bank_id>/playground/", views.playground, name="playground"),
]
