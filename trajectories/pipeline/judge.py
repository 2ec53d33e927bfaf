"""The judge stage: the LLM reads a trajectory and gives a verdict, recorded
as a Judgment (source ``llm``) keyed by the prompt version.

Concurrency and idempotency rest on compare-and-set status moves
(trajectories.pipeline.transitions: a lost move means another worker has it)
and on writing the verdict and the next status in one transaction that first
re-checks the status under a row lock. So a task delivered twice, or redone
by the sweeper while the first run still finishes, never writes a second
judgment."""

from __future__ import annotations

from django.db import transaction

from reasoningbank_site.commits import commit_without_waiting_for_disk
from trajectories.judging.few_shot import judge_examples
from trajectories.judging.models import PromptName
from trajectories.judging.prompt_versions import (
    FEW_SHOT_SUFFIX,
    ActivePrompt,
    active_prompt_versions,
    prompt_active_among,
)
from trajectories.judging.verdicts import judgment_record
from trajectories.models import JudgmentSource, Status, Trajectory
from trajectories.pipeline.budget import budget_is_set
from trajectories.pipeline.llm import judge_model_for
from trajectories.pipeline.llm_calls import JUDGE_CALL, llm_ask
from trajectories.pipeline.parsing import parse_judge_answer
from trajectories.pipeline.prompting import render_trajectory
from trajectories.pipeline.rows import DISTILLING_DETAIL, trajectory_row
from trajectories.pipeline.transitions import trajectory_move, trajectory_move_on, trajectory_take
from trajectories.prompts import prompt_fill


def judge_prompt_build(*, trajectory: Trajectory, prompt: ActivePrompt, few_shot: bool) -> tuple[str, str]:
    """(text, version) of the judge prompt for ``trajectory``: ``prompt``'s
    words, with reviewers' verdicts on similar trajectories before the record
    when ``few_shot`` (the version then ends in ``+fs``). Experiments build
    their candidates' prompts with it too."""
    examples = judge_examples(trajectory=trajectory, budget=trajectory.bank.few_shot_max_chars) if few_shot else ""
    text = prompt_fill(prompt.text, trajectory=examples + render_trajectory(trajectory))
    return text, prompt.version + (FEW_SHOT_SUFFIX if examples else "")


def trajectory_judge(*, trajectory_id: int) -> bool:
    """Ask the LLM judge for a verdict and record it as Judgment(source=llm)
    keyed by the prompt version; the trajectory becomes ``judged``. An answer
    with no explicit verdict is asked again once, then the trajectory is
    ``needs_attention`` with the answer's start. Returns True when the
    trajectory is now judged by this call. Raises LLMTransientError after
    handing the trajectory back to ``received``."""
    t = trajectory_row(trajectory_id)
    return t is not None and judge_row(t, distill_next=False)


def judge_row(t: Trajectory, *, distill_next: bool) -> bool:
    """trajectory_judge on the row ``t`` (read by trajectory_row). With
    ``distill_next`` the judged trajectory is taken for distillation in the
    same transaction as its verdict (judged → distilling: the caller
    distills it next). ``t.verdict`` is updated in place."""
    if not trajectory_take(
        t.pk,
        from_=[Status.RECEIVED, Status.AWAITING_LLM],
        to=Status.JUDGING,
        detail="The LLM judge is reading it.",
    ):
        return False
    prompt, version = judge_prompt_build(
        trajectory=t,
        prompt=prompt_active_among(name=PromptName.JUDGE, versions=t.active_prompts),
        few_shot=t.bank.few_shot_enabled,
    )
    if version in (t.llm_judged or ()):
        if distill_next:
            return trajectory_move_on(
                t.pk, from_=Status.JUDGING, via=Status.JUDGED, to=Status.DISTILLING, detail=DISTILLING_DETAIL
            )
        return trajectory_move(
            t.pk, from_=Status.JUDGING, to=Status.JUDGED, detail="Already judged with this prompt version."
        )
    model = judge_model_for(t.bank)
    parsed = llm_ask(
        JUDGE_CALL,
        rows=Trajectory.objects.filter(pk=t.pk),
        running=Status.JUDGING,
        back_to=Status.RECEIVED,
        model=model,
        version=version,
        prompt=prompt,
        parse=parse_judge_answer,
        bank_id=t.bank_id,
        trajectory_ids=[t.pk],
        budgeted=budget_is_set(t),
    )
    if parsed is None:
        return False
    with transaction.atomic():
        # Committed without waiting for the WAL flush: a database crash in the next fraction of a second can
        # lose it whole (judgment, verdict, status move), which leaves the row judging, as if this worker had
        # died while the LLM answered: the sweeper judges it again. Nothing a client sent is in it, and the next
        # durable commit on the server (this worker's items, a moment later) flushes it.
        commit_without_waiting_for_disk()
        locked = (
            Trajectory.objects.select_for_update()
            .only("pk", "status", "verdict", "verdict_tier", "retrieval_id", "bank_id", "step_count", "learn")
            .annotate(active_prompts=active_prompt_versions())  # the distiller's words as of now
            .get(pk=t.pk)
        )
        if locked.status != Status.JUDGING:
            return False  # relabelled or swept meanwhile: this result is stale
        judgment_record(
            trajectory=locked,
            source=JudgmentSource.LLM,
            label=parsed.label,
            rationale=parsed.rationale,
            model=model,
            prompt_version=version,
            locked=True,
            save_verdict=False,  # written with the status move below: one UPDATE
        )
        verdict = {"verdict": locked.verdict, "verdict_tier": locked.verdict_tier}
        if distill_next:
            trajectory_move_on(
                t.pk,
                from_=Status.JUDGING,
                via=Status.JUDGED,
                to=Status.DISTILLING,
                detail=DISTILLING_DETAIL,
                also=verdict,
            )
        else:
            detail = f"Judged {parsed.label} by {model}."
            trajectory_move(t.pk, from_=Status.JUDGING, to=Status.JUDGED, detail=detail, also=verdict)
    t.verdict, t.active_prompts = locked.verdict, locked.active_prompts
    return True
