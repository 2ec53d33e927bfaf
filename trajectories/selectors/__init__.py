"""Reads for the trajectories app (the API and the HTML views use the same
ones). ``trajectories`` owns reads of trajectories themselves — one, a list,
judgments, derived items, step display records, agent names;
``dashboard`` owns the bank dashboard's aggregates — status counts,
judge/human agreement, recent activity, review backlog."""

from trajectories.selectors.dashboard import (
    Activity,
    Agreement,
    DistillOutcome,
    Rate,
    VersionAgreement,
    distill_outcomes_by_version,
    judge_agreement_by_version,
    judge_human_agreement,
    recent_activity,
    review_backlog,
    status_counts,
)
from trajectories.selectors.trajectories import (
    IN_FLIGHT,
    LONG_TEXT,
    StepView,
    cited_step_indexes,
    step_views,
    trajectory_agents,
    trajectory_derived_items,
    trajectory_for_bank,
    trajectory_get_for_bank,
    trajectory_judgments,
    trajectory_list,
)

__all__ = [
    "IN_FLIGHT",
    "LONG_TEXT",
    "Activity",
    "Agreement",
    "DistillOutcome",
    "Rate",
    "StepView",
    "VersionAgreement",
    "cited_step_indexes",
    "distill_outcomes_by_version",
    "judge_agreement_by_version",
    "judge_human_agreement",
    "recent_activity",
    "review_backlog",
    "status_counts",
    "step_views",
    "trajectory_agents",
    "trajectory_derived_items",
    "trajectory_for_bank",
    "trajectory_get_for_bank",
    "trajectory_judgments",
    "trajectory_list",
]
