"""The learning pipeline's stages: judge → distill (or MaTTS contrast /
refinement distill), and the driver that runs the ones a trajectory is ready
for. Tasks (trajectories.tasks) call these; these never import tasks: they
enqueue follow-up work by task name (``enqueue_on_commit``).

Concurrency and idempotency rest on compare-and-set status moves
(trajectories.transitions; a lost move means another worker has it) and on
writing a stage's results and its next status in one transaction that first
re-checks the status under a row lock. So a task delivered twice, or redone
by the sweeper while the first run still finishes, never writes a second
judgment or a second set of items.

The LLM is called outside any transaction, through ``_llm_ask``: a transient
LLM error hands the rows back to the state before the stage and re-raises for
the Celery task to retry; a permanent one, or an answer still unparseable
after one reminder, ends in ``needs_attention`` with the reason — never a
guessed label."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.db import transaction
from django.db.models import F, JSONField, QuerySet
from django.db.models.expressions import RawSQL

from memories.embeddings import embeddings_prefetched, item_embedding_text
from memories.models import Experience, ItemOrigin
from memories.services import ProposedItem, experience_create, memory_items_propose
from reasoningbank_site.celery import enqueue_on_commit
from reasoningbank_site.db import SelectCompiledOnce, queryset_as_get, without_waiting_for_disk
from reasoningbank_site.text import counted
from trajectories.judging.few_shot import distill_examples, judge_examples
from trajectories.judging.prompt_versions import (
    FEW_SHOT_SUFFIX,
    ActivePrompt,
    active_prompt_versions,
    prompt_active,
    prompt_active_among,
)
from trajectories.llm import (
    LLMPermanentError,
    LLMTransientError,
    chat,
    distill_model_for,
    judge_model_for,
    llm_configured,
)
from trajectories.models import Judgment, JudgmentSource, Label, PromptName, Status, Trajectory
from trajectories.parsing import parse_judge_answer, parse_memory_items
from trajectories.prompting import excerpt, render_group, render_trajectory
from trajectories.prompts import prompt_fill
from trajectories.services import judgment_record
from trajectories.transitions import trajectory_move, trajectory_move_many, trajectory_move_on, trajectory_take

log = logging.getLogger(__name__)

MAX_ITEMS = 3
MAX_ITEMS_PARALLEL = 5
NO_LLM_DETAIL = "No LLM endpoint is configured (RB_LLM_BASE_URL); it resumes when one is set. Humans can judge it and write items meanwhile."

JUDGE_REMINDER = (
    "I could not find an explicit verdict in your answer. Reply with only this JSON object and nothing else: "
    '{"verdict": "success" or "failure", "rationale": "..."}'
)
DISTILL_REMINDER = (
    "I could not find complete memory items in your answer. Write them now, each with a Title, a Description "
    "and a Content section, in the '# Memory Item N' format asked for."
)

T = TypeVar("T")


# ---------------------------------------------------------------------------
# The one way a stage asks the LLM
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LLMCall:
    """What a stage asks and how its failures read in ``status_detail``."""

    doing: str  # "LLM judge": "<doing> failed transiently, will retry: …", "<doing> error: …"
    who: str  # "judge": "The <who> (model, version) gave no <expected> after a retry. …"
    expected: str  # "parseable verdict"
    reminder: str  # sent once when the first answer has nothing parseable
    attempts: str  # the row's counter of this stage's transient failures (its own retry budget)
    purpose: str = "distill"  # the LLM metrics' purpose label: "judge" or "distill"


JUDGE_CALL = LLMCall(
    doing="LLM judge",
    who="judge",
    expected="parseable verdict",
    reminder=JUDGE_REMINDER,
    attempts="judge_attempts",
    purpose="judge",
)
DISTILL_CALL = LLMCall(
    doing="Distillation",
    who="distiller",
    expected="complete memory item",
    reminder=DISTILL_REMINDER,
    attempts="distill_attempts",
)
CONTRAST_CALL = LLMCall(
    doing="Contrast distillation",
    who="distiller",
    expected="complete memory item",
    reminder=DISTILL_REMINDER,
    attempts="contrast_attempts",
)


def _llm_ask(
    call: LLMCall,
    *,
    rows: QuerySet[Trajectory],
    running: str,
    back_to: str,
    model: str,
    version: str,
    prompt: str,
    parse: Callable[[str], T | None],
) -> T | None:
    """Ask ``model``; when ``parse`` finds nothing in the answer, remind it once.
    Returns the parsed answer, or None after moving ``rows`` (those still
    ``running``) to ``needs_attention``: on a permanent LLM error, or when the
    second answer is unparseable too. On a transient error the rows go back to
    ``back_to`` with the stage's failure counted, and LLMTransientError is
    re-raised (``exc.call`` names the stage) for the task to retry."""
    messages = [{"role": "user", "content": prompt}]
    try:
        answer = chat(model=model, messages=messages, purpose=call.purpose)
        parsed = parse(answer)
        if parsed is None:
            log.info("%s answer had nothing parseable; asking once more (%s)", call.who, version)
            messages += [
                {"role": "assistant", "content": answer or "(empty)"},
                {"role": "user", "content": call.reminder},
            ]
            answer = chat(model=model, messages=messages, purpose=call.purpose)
            parsed = parse(answer)
    except LLMTransientError as exc:
        trajectory_move_many(
            rows,
            from_=running,
            to=back_to,
            detail=f"{call.doing} failed transiently, will retry: {exc}",
            also={call.attempts: F(call.attempts) + 1},
        )
        exc.call = call
        raise
    except LLMPermanentError as exc:
        trajectory_move_many(rows, from_=running, to=Status.NEEDS_ATTENTION, detail=f"{call.doing} error: {exc}")
        return None
    if parsed is None:
        trajectory_move_many(
            rows,
            from_=running,
            to=Status.NEEDS_ATTENTION,
            detail=f"The {call.who} ({model}, {version}) gave no {call.expected} after a retry. "
            f"Its answer began: {excerpt(answer)}",
        )
    return parsed


def _items_parser(max_items: int):
    return lambda answer: parse_memory_items(answer, max_items=max_items) or None


# ---------------------------------------------------------------------------
# Prompts: the bank's active wording, with reviewers' examples when it wants them
# ---------------------------------------------------------------------------


def judge_prompt_build(*, trajectory: Trajectory, prompt: ActivePrompt, few_shot: bool) -> tuple[str, str]:
    """(text, version) of the judge prompt for ``trajectory``: ``prompt``'s
    words, with reviewers' verdicts on similar trajectories before the record
    when ``few_shot`` (the version then ends in ``+fs``). Experiments build
    their candidates' prompts with it too."""
    examples = judge_examples(trajectory=trajectory, budget=trajectory.bank.few_shot_max_chars) if few_shot else ""
    text = prompt_fill(prompt.text, trajectory=examples + render_trajectory(trajectory))
    return text, prompt.version + (FEW_SHOT_SUFFIX if examples else "")


def _distill_prompt(t: Trajectory, name: str, block: str, **values: str) -> tuple[str, str]:
    prompt = prompt_active_among(name=name, versions=t.active_prompts)  # read with the row (_trajectory_row)
    examples = distill_examples(trajectory=t, budget=t.bank.few_shot_max_chars) if t.bank.few_shot_enabled else ""
    text = prompt_fill(prompt.text, trajectory=examples + block, **values)
    return text, prompt.version + (FEW_SHOT_SUFFIX if examples else "")


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------


# The prompt versions of a trajectory's LLM judgments (raw SQL: cheaper to build than the ORM's subquery).
_LLM_JUDGED = RawSQL(
    f"(SELECT coalesce(jsonb_agg(j.prompt_version), '[]') FROM {Judgment._meta.db_table} j"
    f' WHERE j.trajectory_id = "{Trajectory._meta.db_table}"."id" AND j.source = %s)',
    (JudgmentSource.LLM.value,),
    output_field=JSONField(),
)


def _trajectory_row(trajectory_id: int) -> Trajectory | None:
    """The row the stages of one trajectory work on, read once: with its bank,
    the prompt versions of its LLM judgments (``llm_judged``, which the judge
    checks before asking) and the bank's active prompts (``active_prompts``:
    the judge's and distiller's words; the judge reads them again with its
    verdict, so the distiller's are those active when the judge answered). Read before a stage takes the row: the take
    is a compare-and-set on its status, and what a stage reads of it (task,
    steps, verdict) changes only with a status move that makes the take, or
    the stage's check under its row lock, fail."""
    rows = _TRAJECTORY_ROW(trajectory_id)
    return rows[0] if rows else None


def _trajectory_row_queryset(trajectory_id: int) -> QuerySet[Trajectory]:
    """_trajectory_row's, as ``first()`` runs it."""
    rows = (
        Trajectory.objects.select_related("bank")
        .annotate(llm_judged=_LLM_JUDGED, active_prompts=active_prompt_versions())
        .filter(pk=trajectory_id)
    )
    return (rows if rows.ordered else rows.order_by("pk"))[:1]


def _judge_lock_queryset(trajectory_id: int) -> QuerySet[Trajectory]:
    """The judge's re-read of its row under the row lock, as ``get()`` runs it."""
    return queryset_as_get(
        without_waiting_for_disk(
            Trajectory.objects.select_for_update()
            .only("pk", "status", "verdict", "retrieval_id", "bank_id", "step_count")
            .annotate(active_prompts=active_prompt_versions())  # the distiller's words as of now
            .filter(pk=trajectory_id)
        )
    )


def _distill_lock_queryset(trajectory_id: int) -> QuerySet[Trajectory]:
    """The distiller's re-read of its row under the row lock, as ``get()`` runs it."""
    return queryset_as_get(
        Trajectory.objects.select_for_update(of=("self",))
        .select_related("bank__team", "experience")  # the team: for the items' audit events
        .defer("steps")
        .filter(pk=trajectory_id)
    )


# Compiled once (issue 14): the stages read these for every trajectory.
_TRAJECTORY_ROW = SelectCompiledOnce(_trajectory_row_queryset)
_JUDGE_LOCK = SelectCompiledOnce(_judge_lock_queryset)
_DISTILL_LOCK = SelectCompiledOnce(_distill_lock_queryset)


def trajectory_advance(*, trajectory_id: int) -> None:
    """Run every stage the trajectory is ready for, from its current status:
    received → judged (judge, or skipped when a verdict exists) → distilling
    → done, or → waiting_group for MaTTS members. Stops quietly when another
    worker owns the row or nothing is left to do. Raises LLMTransientError
    (after handing the row back) for the caller to retry later."""
    t = None
    for _ in range(4):  # each pass moves the status forward; the bound guards against a loop
        if t is None:
            t = _trajectory_row(trajectory_id)  # the stages below work on this row: read once
            if t is None:
                return
        if t.status in (Status.RECEIVED, Status.AWAITING_LLM):
            if t.verdict:  # trusted agent signal or a human verdict: no judge needed
                trajectory_move(
                    t.pk,
                    from_=[Status.RECEIVED, Status.AWAITING_LLM],
                    to=Status.JUDGED,
                    detail=f"Verdict {t.verdict} given; judge skipped.",
                )
                t = None  # read again: another worker may have moved it first
                continue
            if not llm_configured():
                trajectory_move(t.pk, from_=Status.RECEIVED, to=Status.AWAITING_LLM, detail=NO_LLM_DETAIL)
                return
            # A MaTTS member waits for its group once judged; any other goes on to distillation, taken by the
            # judge's own transaction (never seen in judged: one commit fewer).
            distill_next = not t.group_id
            if not _judge(t, distill_next=distill_next):
                return
            if distill_next:
                _distill(t)
                return
            # Judged by this call: the next stage is known without reading the row again.
            t.status = Status.JUDGED
            continue
        elif t.status == Status.JUDGED:
            if t.group_id:
                if trajectory_move(
                    t.pk,
                    from_=Status.JUDGED,
                    to=Status.WAITING_GROUP,
                    detail="Waiting for the rest of its MaTTS group.",
                ):
                    trajectory_group_distill(bank_id=t.bank_id, group_id=t.group_id)
                return
            if not llm_configured():
                trajectory_move(t.pk, from_=Status.JUDGED, to=Status.AWAITING_LLM, detail=NO_LLM_DETAIL)
                return
            if _distill_take(t.pk):
                _distill(t)
            return
        elif t.status == Status.WAITING_GROUP:
            trajectory_group_distill(bank_id=t.bank_id, group_id=t.group_id)
            return
        else:  # judging/distilling (someone has it), done, needs_attention
            return


# ---------------------------------------------------------------------------
# Judge
# ---------------------------------------------------------------------------


def trajectory_judge(*, trajectory_id: int) -> bool:
    """Ask the LLM judge for a verdict and record it as Judgment(source=llm)
    keyed by the prompt version; the trajectory becomes ``judged``. An answer
    with no explicit verdict is asked again once, then the trajectory is
    ``needs_attention`` with the answer's start. Returns True when the
    trajectory is now judged by this call. Raises LLMTransientError after
    handing the trajectory back to ``received``."""
    t = _trajectory_row(trajectory_id)
    return t is not None and _judge(t, distill_next=False)


DISTILLING_DETAIL = "Distilling memory items."


def _judge(t: Trajectory, *, distill_next: bool) -> bool:
    """trajectory_judge on the row ``t`` (read by _trajectory_row). With
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
    parsed = _llm_ask(
        JUDGE_CALL,
        rows=Trajectory.objects.filter(pk=t.pk),
        running=Status.JUDGING,
        back_to=Status.RECEIVED,
        model=model,
        version=version,
        prompt=prompt,
        parse=parse_judge_answer,
    )
    if parsed is None:
        return False
    # The verdict is committed without waiting for the WAL flush (no statement of its own): a database crash in
    # the next fraction of a second can lose it whole (judgment, verdict, status move), which leaves the row
    # judging, as if this worker had died while the LLM answered: the sweeper judges it again. Nothing a client
    # sent is in it, and the next durable commit on the server (this worker's items, a moment later) flushes it.
    with transaction.atomic():
        locked = _JUDGE_LOCK.get(t.pk)  # with the distiller's words as of now
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
        verdict = {"verdict": locked.verdict}
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


# ---------------------------------------------------------------------------
# Distill
# ---------------------------------------------------------------------------


def _has_refinements(t: Trajectory) -> bool:
    return any(isinstance(s, dict) and s.get("kind") == "refinement" for s in (t.steps or []))


def _step_indexes(t: Trajectory) -> set[int]:
    return {s.get("index") for s in (t.steps or []) if isinstance(s, dict) and isinstance(s.get("index"), int)}


def _ensure_experience(t: Trajectory) -> Experience:
    if t.experience_id:
        return t.experience
    experience = experience_create(bank=t.bank, task=t.task, task_id=t.task_id)
    t.experience = experience
    Trajectory.objects.filter(pk=t.pk).update(experience=experience)
    return experience


def trajectory_distill(*, trajectory_id: int) -> bool:
    """Distill up to 3 memory items from one judged trajectory with the prompt
    its verdict calls for (success, failure, or MaTTS-sequential when it has
    refinement steps), proposing them through ``memory_item_propose`` under an
    Experience linked to the trajectory; the trajectory becomes ``done``.
    Returns True when this call proposed the items. Raises
    LLMTransientError after handing the trajectory back to ``judged``."""
    t = _trajectory_row(trajectory_id)
    return t is not None and _distill_take(t.pk) and _distill(t)


def _distill_take(trajectory_id: int) -> bool:
    return trajectory_take(trajectory_id, from_=Status.JUDGED, to=Status.DISTILLING, detail=DISTILLING_DETAIL)


def _distill(t: Trajectory) -> bool:
    """trajectory_distill on the row ``t`` (read by _trajectory_row), taken (distilling) by this worker."""
    if t.verdict not in Label.values:
        trajectory_move(
            t.pk,
            from_=Status.DISTILLING,
            to=Status.NEEDS_ATTENTION,
            detail="No verdict to distill under; judge it first.",
        )
        return False
    if _has_refinements(t):
        name, origin = "matts_sequential", ItemOrigin.MATTS_SEQUENTIAL
    elif t.verdict == Label.SUCCESS:
        name, origin = "distill_success", ItemOrigin.SUCCESS
    else:
        name, origin = "distill_failure", ItemOrigin.FAILURE
    block = f"Verdict given to this run by the reviewers (not part of the record): {t.verdict.upper()}\n\n{render_trajectory(t)}"
    prompt, version = _distill_prompt(t, name, block, max_items=str(MAX_ITEMS))
    model = distill_model_for(t.bank)
    items = _llm_ask(
        DISTILL_CALL,
        rows=Trajectory.objects.filter(pk=t.pk),
        running=Status.DISTILLING,
        back_to=Status.JUDGED,
        model=model,
        version=version,
        prompt=prompt,
        parse=_items_parser(MAX_ITEMS),
    )
    if items is None:
        return False
    valid_steps = _step_indexes(t)
    # The items and (when new) the experience's task, embedded in one model call (issue 14 goal 6).
    texts = [item_embedding_text(title=i.title, description=i.description, content=i.content) for i in items]
    with embeddings_prefetched(texts + ([] if t.experience_id else [t.task.strip()])), transaction.atomic():
        locked = _DISTILL_LOCK.get(t.pk)  # with its bank, the bank's team and its experience
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
        )
        trajectory_move(t.pk, from_=Status.DISTILLING, to=Status.DONE, detail=_proposed_detail(proposed), also=link)
    return True


def _proposed_detail(proposed) -> str:
    again = sum(1 for item in proposed if getattr(item, "supported_by", None) is not None)
    detail = f"{counted(len(proposed) - again, 'memory item')} proposed for review."
    if again:
        detail += f" {again} the bank already holds, recorded as supporting evidence on it."
    return detail


# ---------------------------------------------------------------------------
# MaTTS parallel: contrast a group of rollouts of one task
# ---------------------------------------------------------------------------


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
    members = list(Trajectory.objects.select_related("bank").filter(pk__in=ids).order_by("created_at", "pk"))
    bank = members[0].bank
    contrast = prompt_active(bank=bank, name=PromptName.MATTS_PARALLEL)
    prompt = prompt_fill(contrast.text, rollouts=render_group(members), max_items=str(MAX_ITEMS_PARALLEL))
    version = contrast.version
    model = distill_model_for(bank)
    items = _llm_ask(
        CONTRAST_CALL,
        rows=Trajectory.objects.filter(pk__in=ids),
        running=Status.DISTILLING,
        back_to=Status.WAITING_GROUP,
        model=model,
        version=version,
        prompt=prompt,
        parse=_items_parser(MAX_ITEMS_PARALLEL),
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
        steps_by_rollout = {n: _step_indexes(m) for n, m in enumerate(locked, start=1)}
        memory_items_propose(
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
        trajectory_move_many(
            Trajectory.objects.filter(pk__in=ids),
            from_=Status.DISTILLING,
            to=Status.DONE,
            detail=f"Contrasted with {counted(len(ids) - 1, 'other rollout')}: {counted(len(items), 'item')} proposed.",
        )
    return True
