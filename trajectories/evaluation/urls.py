"""The evaluation pages of a bank: its task sets and its evaluation runs (included by trajectories.urls)."""

from django.urls import path

from trajectories.evaluation import views, views_tasksets

urlpatterns: list = [
    path("banks/<uuid:bank_id>/task-sets/", views_tasksets.task_sets, name="task_sets"),
    path("banks/<uuid:bank_id>/task-sets/<uuid:task_set_id>/", views_tasksets.task_set_detail, name="task_set_detail"),
    path(
        "banks/<uuid:bank_id>/task-sets/<uuid:task_set_id>/delete/",
        views_tasksets.task_set_delete,
        name="task_set_delete",
    ),
    path("banks/<uuid:bank_id>/evaluations/", views.evaluations, name="evaluations"),
    path("banks/<uuid:bank_id>/evaluations/<uuid:evaluation_id>/", views.evaluation_detail, name="evaluation_detail"),
    path(
        "banks/<uuid:bank_id>/evaluations/<uuid:evaluation_id>/tasks/<path:task_key>/",
        views.evaluation_task,
        name="evaluation_task",
    ),
]
