from django.urls import include, path

from trajectories.dashboard import reviewer_views as reviewers
from trajectories.dashboard import views as dashboard
from trajectories.exports import views as exports
from trajectories.impact import release_views as releases
from trajectories.impact import views as impact
from trajectories.judging import evidence_views as evidence
from trajectories.judging import views as judge
from trajectories.records import comment_views as comments
from trajectories.records import views as trajectories

app_name = "trajectories"
urlpatterns = [
    path("", include("trajectories.evaluation.urls")),
    path("banks/<uuid:bank_id>/", dashboard.dashboard, name="dashboard"),
    path("banks/<uuid:bank_id>/dashboard/figures/", dashboard.dashboard_figures, name="dashboard_figures"),
    path("banks/<uuid:bank_id>/trajectories/", trajectories.trajectory_list, name="list"),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/", trajectories.trajectory_detail, name="detail"),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/steps/", trajectories.trajectory_steps, name="steps"),
    path(
        "banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/evidence/",
        evidence.trajectory_evidence_view,
        name="evidence",
    ),
    path("banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/group/", trajectories.trajectory_group, name="group"),
    path(
        "banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/delete/", trajectories.trajectory_delete, name="delete"
    ),
    path(
        "banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/retry/",
        trajectories.trajectory_retry_view,
        name="retry",
    ),
    path("banks/<uuid:bank_id>/impact/", impact.impact, name="impact"),
    path("banks/<uuid:bank_id>/impact/items/", impact.impact_items, name="impact_items"),
    path("banks/<uuid:bank_id>/releases/", releases.releases, name="releases"),
    path(
        "banks/<uuid:bank_id>/releases/imports/<uuid:import_id>/",
        releases.release_import_status,
        name="release_import",
    ),
    path("banks/<uuid:bank_id>/releases/<uuid:release_id>/", releases.release_detail, name="release_detail"),
    path(
        "banks/<uuid:bank_id>/releases/<uuid:release_id>/export.jsonl",
        releases.release_export_download,
        name="release_export",
    ),
    path("banks/<uuid:bank_id>/judge/", judge.judge, name="judge"),
    path("banks/<uuid:bank_id>/export/", exports.export_page, name="export"),
    path("banks/<uuid:bank_id>/export/chat.jsonl", exports.export_chat, name="export_chat"),
    path("banks/<uuid:bank_id>/export/judge-eval.jsonl", exports.export_judge_eval, name="export_judge_eval"),
    path(
        "banks/<uuid:bank_id>/export/reasoning-bank.jsonl", exports.export_reasoning_bank, name="export_reasoning_bank"
    ),
    path("banks/<uuid:bank_id>/judge/prompts/<str:name>/", judge.prompt_edit, name="prompt_edit"),
    path(
        "banks/<uuid:bank_id>/judge/prompts/<str:name>/use/<str:version_id>/",
        judge.prompt_activate,
        name="prompt_activate",
    ),
    path("banks/<uuid:bank_id>/judge/experiments/<uuid:experiment_id>/", judge.experiment_detail, name="experiment"),
    path(
        "banks/<uuid:bank_id>/judge/experiments/<uuid:experiment_id>/promote/",
        judge.experiment_promote_view,
        name="experiment_promote",
    ),
    # Several reviewers: comments on items and trajectories, per-reviewer statistics
    path("banks/<uuid:bank_id>/items/<uuid:item_id>/comments/", comments.item_comments, name="item_comments"),
    path(
        "banks/<uuid:bank_id>/trajectories/<uuid:trajectory_id>/comments/",
        comments.trajectory_comments,
        name="trajectory_comments",
    ),
    path(
        "banks/<uuid:bank_id>/comments/<uuid:comment_id>/delete/",
        comments.comment_remove,
        name="comment_remove",
    ),
    path("banks/<uuid:bank_id>/reviewers/", reviewers.reviewers, name="reviewers"),
    path("banks/<uuid:bank_id>/reviewers/figures/", reviewers.reviewers_figures, name="reviewers_figures"),
]
