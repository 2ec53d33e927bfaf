"""The evaluation pages of a bank: its task sets and its evaluation runs (included by trajectories.urls)."""

from django.urls import path

from trajectories.evaluation import views

urlpatterns: list = [
    path("banks/<uuid:bank_id>/evaluations/", views.evaluations, name="evaluations"),
    path("banks/<uuid:bank_id>/evaluations/<uuid:evaluation_id>/", views.evaluation_detail, name="evaluation_detail"),
    path(
        "banks/<uuid:bank_id>/evaluations/<uuid:evaluation_id>/tasks/<path:task_key>/",
        views.evaluation_task,
        name="evaluation_task",
    ),
]
