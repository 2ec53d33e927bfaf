"""The evaluation pages of a bank: its task sets and its evaluation runs (included by trajectories.urls)."""

from django.urls import path

from trajectories.evaluation import views_tasksets

urlpatterns: list = [
    path("banks/<uuid:bank_id>/task-sets/", views_tasksets.task_sets, name="task_sets"),
    path("banks/<uuid:bank_id>/task-sets/<uuid:task_set_id>/", views_tasksets.task_set_detail, name="task_set_detail"),
    path(
        "banks/<uuid:bank_id>/task-sets/<uuid:task_set_id>/delete/",
        views_tasksets.task_set_delete,
        name="task_set_delete",
    ),
]
