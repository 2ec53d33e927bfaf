from django.urls import path

from trajectories import exports, views, views_reviewers

app_name = "trajectories"
urlpatterns = [
    path("banks/<uuid:bank_id>/", views.dashboard, name="dashboard"),
    path("banks/<uuid:bank_id>/trajectories/", views.trajectory_list, name="list"),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/", views.trajectory_detail, name="detail"),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/steps/", views.trajectory_steps, name="steps"),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/group/", views.trajectory_group, name="group"),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/delete/", views.trajectory_delete, name="delete"),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/retry/", views.trajectory_retry_view, name="retry"),
    path("banks/<uuid:bank_id>/impact/", views.impact, name="impact"),
    path("banks/<uuid:bank_id>/judge/", views.judge, name="judge"),
    path("banks/<uuid:bank_id>/export/", exports.export_page, name="export"),
    path("banks/<uuid:bank_id>/export/chat.jsonl", exports.export_chat, name="export_chat"),
    path("banks/<uuid:bank_id>/export/judge-eval.jsonl", exports.export_judge_eval, name="export_judge_eval"),
    path(
        "banks/<uuid:bank_id>/export/reasoning-bank.jsonl", exports.export_reasoning_bank, name="export_reasoning_bank"
    ),
    path("banks/<uuid:bank_id>/judge/prompts/<str:name>/", views.prompt_edit, name="prompt_edit"),
    path(
        "banks/<uuid:bank_id>/judge/prompts/<str:name>/use/<str:version_id>/",
        views.prompt_activate,
        name="prompt_activate",
    ),
    path("banks/<uuid:bank_id>/judge/experiments/<uuid:experiment_id>/", views.experiment_detail, name="experiment"),
    path(
        "banks/<uuid:bank_id>/judge/experiments/<uuid:experiment_id>/promote/",
        views.experiment_promote_view,
        name="experiment_promote",
    ),
    # Several reviewers: comments on items and trajectories, per-reviewer statistics
    path("banks/<uuid:bank_id>/items/<uuid:item_id>/comments/", views_reviewers.item_comments, name="item_comments"),
    path(
        "banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/comments/",
        views_reviewers.trajectory_comments,
        name="trajectory_comments",
    ),
    path(
        "banks/<uuid:bank_id>/comments/<uuid:comment_id>/delete/",
        views_reviewers.comment_remove,
        name="comment_remove",
    ),
    path("banks/<uuid:bank_id>/reviewers/", views_reviewers.reviewers, name="reviewers"),
]
