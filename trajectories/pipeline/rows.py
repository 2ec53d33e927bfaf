"""The row the stages of one trajectory work on, read once, and the status
details the stages share."""

from __future__ import annotations

from django.db.models import JSONField
from django.db.models.expressions import RawSQL

from trajectories.judging.prompt_versions import active_prompt_versions
from trajectories.models import Judgment, JudgmentSource, Trajectory
from trajectories.pipeline.budget import BUDGET_LEFT

NO_LLM_DETAIL = "No LLM endpoint is configured (RB_LLM_BASE_URL); it resumes when one is set. Humans can judge it and write items meanwhile."
DISTILLING_DETAIL = "Distilling memory items."
NOT_LEARNT_DETAIL = "An evaluation try: judged, never distilled into the bank."

# The prompt versions of a trajectory's LLM judgments (raw SQL: cheaper to build than the ORM's subquery).
LLM_JUDGED = RawSQL(
    f"(SELECT coalesce(jsonb_agg(j.prompt_version), '[]') FROM {Judgment._meta.db_table} j"
    f' WHERE j.trajectory_id = "{Trajectory._meta.db_table}"."id" AND j.source = %s)',
    (JudgmentSource.LLM.value,),
    output_field=JSONField(),
)


def trajectory_row(trajectory_id: int) -> Trajectory | None:
    """The row the stages of one trajectory work on, read once: with its bank,
    the prompt versions of its LLM judgments (``llm_judged``, which the judge
    checks before asking) and the bank's active prompts (``active_prompts``:
    the judge's and distiller's words; the judge reads them again with its
    verdict, so the distiller's are those active when the judge answered).
    Read before a stage takes the row: the take is a compare-and-set on its
    status, and what a stage reads of it (task, steps, verdict) changes only
    with a status move that makes the take, or the stage's check under its
    row lock, fail. ``llm_budget_left``: today's LLM token budget left for
    its bank (None: no budget; trajectories.pipeline.budget)."""
    return (
        Trajectory.objects.select_related("bank", "raw")
        .annotate(llm_judged=LLM_JUDGED, active_prompts=active_prompt_versions(), llm_budget_left=BUDGET_LEFT)
        .filter(pk=trajectory_id)
        .first()
    )
