"""MaTTS parallel: contrast a group of rollouts of one task, once the group
is complete (or its wait ran out), into up to MAX_ITEMS_PARALLEL items of
origin matts-parallel under one Experience the members share."""

from __future__ import annotations

from django.db import transaction

from memories.items.experiences import Experience, experience_create
from memories.items.models import ItemOrigin
from memories.items.services import ProposedItem, memory_items_propose
from memories.trust.services import memory_items_screen
from reasoningbank_site.celery import enqueue_on_commit
from reasoningbank_site.text import counted
from trajectories.judging.models import PromptName
from trajectories.judging.prompt_versions import prompt_active
from trajectories.models import Status, Trajectory
from trajectories.pipeline.budget import group_budget_park
from trajectories.pipeline.distill import proposed_detail, step_indexes
from trajectories.pipeline.llm import distill_model_for, llm_configured
from trajectories.pipeline.llm_calls import CONTRAST_CALL, items_parser, llm_ask
from trajectories.pipeline.prompting import render_group
from trajectories.pipeline.rows import NO_LLM_DETAIL
from trajectories.pipeline.transitions import trajectory_move, trajectory_move_many
from trajectories.prompts import prompt_fill

MAX_ITEMS_PARALLEL = 5


def _ensure_experience(t: Trajectory) -> Experience:
    if t.experience_id:
        return t.experience
    experience = experience_create(bank=t.bank, task=t.task, task_id=t.task_id)
    t.experience = experience
    Trajectory.objects.filter(pk=t.pk).update(experience=experience)
    return experience


def trajectory_group_distill(*, bank_id: int, group_id: str, force: bool = False) -> bool:
    """Contrast-distill a MaTTS parallel group once: when as many members are
    judged (``waiting_group``) as the first member declared in
    ``group_size``, or — with ``force``, after the wait ran out — with
    whatever arrived (≥2; a lone member is distilled on its own). Up to 5
    items, origin matts-parallel, one Experience shared by the members.
    Returns True when this call proposed the items. Raises
    LLMTransientError after handing the members back to ``waiting_group``."""
    with transaction.atomic():
        members = list(
            Trajectory.objects.select_for_update()
            .filter(bank_id=bank_id, group_id=group_id)
            .order_by("created_at", "pk")
        )
        if not group_id or not members or any(m.status == Status.DISTILLING for m in members):
            return False
        declared = next((m.group_size for m in members if m.group_size), None)
        ready = [m for m in members if m.status == Status.WAITING_GROUP]
        if not ready or not (force or (declared and len(ready) >= declared)):
            return False
        ids = [m.pk for m in ready]
        if not llm_configured():
            trajectory_move_many(
                Trajectory.objects.filter(pk__in=ids),
                from_=Status.WAITING_GROUP,
                to=Status.WAITING_GROUP,
                detail=NO_LLM_DETAIL,
                also={"enqueued_at": None},  # nothing queued: the sweeper resumes it once an LLM is set
            )
            return False
        if group_budget_park(ids):
            return False
        if len(ready) == 1:
            trajectory_move(
                ids[0],
                from_=Status.WAITING_GROUP,
                to=Status.JUDGED,
                detail="Its MaTTS group closed with no other member; distilled on its own.",
            )
            # Straight to distillation: the driver would put a group member back to waiting.
            enqueue_on_commit("trajectories.distill", ids[0])
            return False
        trajectory_move_many(
            Trajectory.objects.filter(pk__in=ids),
            from_=Status.WAITING_GROUP,
            to=Status.DISTILLING,
            detail=f"Contrasting {len(ids)} rollouts (MaTTS parallel).",
        )
    members = list(Trajectory.objects.select_related("bank", "raw").filter(pk__in=ids).order_by("created_at", "pk"))
    bank = members[0].bank
    contrast = prompt_active(bank=bank, name=PromptName.MATTS_PARALLEL)
    prompt = prompt_fill(contrast.text, rollouts=render_group(members), max_items=str(MAX_ITEMS_PARALLEL))
    version = contrast.version
    model = distill_model_for(bank)
    items = llm_ask(
        CONTRAST_CALL,
        rows=Trajectory.objects.filter(pk__in=ids),
        running=Status.DISTILLING,
        back_to=Status.WAITING_GROUP,
        model=model,
        version=version,
        prompt=prompt,
        parse=items_parser(MAX_ITEMS_PARALLEL),
        bank_id=bank.pk,
        trajectory_ids=ids,
    )
    if items is None:
        return False
    with transaction.atomic():
        locked = list(
            Trajectory.objects.select_for_update(of=("self",))
            .select_related("bank", "experience")
            .filter(pk__in=ids)
            .order_by("created_at", "pk")
        )
        if any(m.status != Status.DISTILLING for m in locked):
            return False  # relabelled or swept meanwhile
        experience = next((m.experience for m in locked if m.experience_id), None) or _ensure_experience(locked[0])
        Trajectory.objects.filter(pk__in=ids).update(experience=experience)
        steps_by_rollout = {n: step_indexes(m) for n, m in enumerate(locked, start=1)}
        proposed = memory_items_propose(
            bank=bank,
            proposals=[
                ProposedItem(
                    title=item.title,
                    description=item.description,
                    content=item.content,
                    cited_steps=[
                        {"trajectory": str(locked[r - 1].public_id), "step": s}
                        for r, s in item.citations
                        if r is not None and r in steps_by_rollout and s in steps_by_rollout[r]
                    ],
                )
                for item in items
            ],
            origin=ItemOrigin.MATTS_PARALLEL,
            experience=experience,
            source_task_id=locked[0].task_id,
            model=model,
            prompt_version=version,
            verdict_label="",
            source_agents=[m.agent for m in locked],
            source_metadata=[m.metadata for m in locked],
        )
        memory_items_screen(
            items=proposed,
            steps=[s for m in members for s in m.steps or []],
            tier=min(m.verdict_tier for m in locked),
            task=locked[0].task,
        )
        trajectory_move_many(
            Trajectory.objects.filter(pk__in=ids),
            from_=Status.DISTILLING,
            to=Status.DONE,
            detail=f"Contrasted with {counted(len(ids) - 1, 'other rollout')}: {proposed_detail(proposed)}",
        )
    return True
