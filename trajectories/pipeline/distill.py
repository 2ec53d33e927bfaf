"""The distill stage: up to MAX_ITEMS memory items from one judged
trajectory, with the prompt its verdict calls for, proposed for review under
an Experience linked to the trajectory. As the judge, it writes its results
and its next status in one transaction that first re-checks the status under
a row lock, so a redelivered task never proposes a second set of items."""

from __future__ import annotations

from django.db import transaction

from memories.embedding.model import embeddings_prefetched, item_embedding_text
from memories.items.experiences import experience_create
from memories.items.models import ItemOrigin, SupportKind
from memories.items.services import ProposedItem, memory_items_propose
from memories.learning.selectors import LearningState, bank_learning_state
from memories.learning.validity import items_environment_observe
from memories.trust.services import memory_items_screen
from reasoningbank_site.text import counted
from trajectories.judging.few_shot import distill_examples
from trajectories.judging.prompt_versions import FEW_SHOT_SUFFIX, prompt_active_among
from trajectories.models import Label, Status, Trajectory
from trajectories.pipeline.budget import budget_is_set
from trajectories.pipeline.llm import distill_model_for
from trajectories.pipeline.llm_calls import DISTILL_CALL, SEQUENTIAL_CALL, items_parser, llm_ask
from trajectories.pipeline.prompting import render_trajectory
from trajectories.pipeline.refused import refused_lessons
from trajectories.pipeline.risk_check import risk_second_opinion
from trajectories.pipeline.rows import DISTILLING_DETAIL, trajectory_row
from trajectories.pipeline.transitions import trajectory_move, trajectory_take
from trajectories.prompts import prompt_fill

MAX_ITEMS = 3


def has_refinements(t: Trajectory) -> bool:
    """Whether ``t`` holds MaTTS-sequential refinement steps."""
    return any(isinstance(s, dict) and s.get("kind") == "refinement" for s in (t.steps or []))


def step_indexes(t: Trajectory) -> set[int]:
    """The step indexes of ``t``: what an item may cite."""
    return {s.get("index") for s in (t.steps or []) if isinstance(s, dict) and isinstance(s.get("index"), int)}


def _distill_prompt(t: Trajectory, name: str, block: str, state: LearningState, **values: str) -> tuple[str, str]:
    prompt = prompt_active_among(name=name, versions=t.active_prompts)  # read with the row (trajectory_row)
    examples = distill_examples(trajectory=t, budget=t.bank.few_shot_max_chars) if t.bank.few_shot_enabled else ""
    text = prompt_fill(prompt.text, trajectory=examples + refused_lessons(t, state) + block, **values)
    return text, prompt.version + (FEW_SHOT_SUFFIX if examples else "")


def trajectory_distill(*, trajectory_id: int) -> bool:
    """Distill up to 3 memory items from one judged trajectory with the prompt
    its verdict calls for (success, failure, or MaTTS-sequential when it has
    refinement steps), proposing them through ``memory_item_propose`` under an
    Experience linked to the trajectory; the trajectory becomes ``done``.
    Returns True when this call proposed the items; never for a trajectory
    that does not learn (``learn=False``: an evaluation try). Raises
    LLMTransientError after handing the trajectory back to ``judged``."""
    t = trajectory_row(trajectory_id)
    return t is not None and t.learn and distill_take(t.pk) and distill_row(t)


def distill_take(trajectory_id: int) -> bool:
    """Take a judged trajectory for distillation (compare-and-set): True when this caller has it."""
    return trajectory_take(trajectory_id, from_=Status.JUDGED, to=Status.DISTILLING, detail=DISTILLING_DETAIL)


def distill_row(t: Trajectory) -> bool:
    """trajectory_distill on the row ``t`` (read by trajectory_row), taken (distilling) by this worker."""
    if t.verdict not in Label.values:
        trajectory_move(
            t.pk,
            from_=Status.DISTILLING,
            to=Status.NEEDS_ATTENTION,
            detail="No verdict to distill under; judge it first.",
        )
        return False
    if has_refinements(t):
        name, origin = "matts_sequential", ItemOrigin.MATTS_SEQUENTIAL
    elif t.verdict == Label.SUCCESS:
        name, origin = "distill_success", ItemOrigin.SUCCESS
    else:
        name, origin = "distill_failure", ItemOrigin.FAILURE
    block = f"Verdict given to this run by the reviewers (not part of the record): {t.verdict.upper()}\n\n{render_trajectory(t)}"
    state = bank_learning_state(bank=t.bank)  # read once: the prompt, the proposals and the environment use it
    prompt, version = _distill_prompt(t, name, block, state, max_items=str(MAX_ITEMS))
    model = distill_model_for(t.bank)
    items = llm_ask(
        SEQUENTIAL_CALL if origin == ItemOrigin.MATTS_SEQUENTIAL else DISTILL_CALL,
        rows=Trajectory.objects.filter(pk=t.pk),
        running=Status.DISTILLING,
        back_to=Status.JUDGED,
        model=model,
        version=version,
        prompt=prompt,
        parse=items_parser(MAX_ITEMS),
        bank_id=t.bank_id,
        trajectory_ids=[t.pk],
        budgeted=budget_is_set(t),
    )
    if items is None:
        return False
    valid_steps = step_indexes(t)
    # The items and (when new) the experience's task, embedded in one model call.
    texts = [item_embedding_text(title=i.title, description=i.description, content=i.content) for i in items]
    with embeddings_prefetched(texts + ([] if t.experience_id else [t.task.strip()])), transaction.atomic():
        locked = (
            Trajectory.objects.select_for_update(of=("self",))
            .select_related("bank__team", "experience")  # the team: for the items' audit events
            .get(pk=t.pk)
        )
        if locked.status != Status.DISTILLING or locked.verdict != t.verdict:
            return False  # relabelled or swept meanwhile: this result is stale
        if locked.experience_id:
            experience, link = locked.experience, None
        else:  # a new experience, linked to the trajectory with its status move below: one UPDATE
            experience = experience_create(bank=locked.bank, task=locked.task, task_id=locked.task_id)
            link = {"experience": experience}
        proposed = memory_items_propose(
            bank=locked.bank,
            proposals=[
                ProposedItem(
                    title=item.title,
                    description=item.description,
                    content=item.content,
                    cited_steps=[
                        {"trajectory": str(locked.public_id), "step": step}
                        for _rollout, step in item.citations
                        if step in valid_steps
                    ],
                )
                for item in items
            ],
            origin=origin,
            experience=experience,
            source_task_id=locked.task_id,
            model=model,
            prompt_version=version,
            verdict_label=locked.verdict,
            source_agents=[locked.agent],
            source_metadata=[locked.metadata],
            experience_trajectory_ids=None if link is None else [str(locked.public_id)],
            learning=state,
        )
        items_environment_observe(
            bank=locked.bank,
            agent=locked.agent,
            metadata=locked.metadata,
            observed_at=locked.created_at,
            learning=state.learning,
        )
        memory_items_screen(items=proposed, steps=t.steps or [], tier=locked.verdict_tier, task=t.task)
        trajectory_move(t.pk, from_=Status.DISTILLING, to=Status.DONE, detail=proposed_detail(proposed), also=link)
    risk_second_opinion(bank=t.bank, items=proposed, trajectory_ids=[t.pk])  # after commit: it only adds findings
    return True


def proposed_detail(proposed) -> str:
    supports = [getattr(item, "supported_by", None) for item in proposed]
    repeated = sum(1 for s in supports if s is not None and s.kind == SupportKind.REPEATED)
    again = sum(1 for s in supports if s is not None) - repeated
    detail = f"{counted(len(proposed) - again - repeated, 'memory item')} proposed for review."
    if again:
        detail += f" {again} the bank already holds, recorded as supporting evidence on it."
    if repeated:
        detail += f" {repeated} repeated a refused lesson, recorded on it as a repeat."
    return detail
