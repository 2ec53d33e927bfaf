"""The tries of an evaluation run: a harness claims the next one (with what its arm serves) and
records what the team's agent did with it.

What an arm serves comes from memories.serving's retrieval_preview, pinned to the arm's release
and leaving out the task's own lessons (leave-one-task-out): an evaluation retrieval logs no
RetrievalEvent, so it never counts in live Impact nor in the items' served counters."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta

import pydantic
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.models import ApiToken
from memories.embedding.model import EmbeddingModelError
from memories.serving import release_searched, served_release
from memories.serving.preview import RetrievalResult, retrieval_preview
from memories.trust.models import VerdictTier
from reasoningbank_site.errors import Conflict, Invalid, NotFound, Unavailable
from reasoningbank_site.text import token_estimate
from trajectories.evaluation.checks import check_describe, check_passes
from trajectories.evaluation.models import ArmKind, AttemptState, EvalAttempt, EvalRun, EvalTask, RunState
from trajectories.evaluation.refresh import evaluation_results_refresh_later
from trajectories.evaluation.tasksets import task_excluded_items
from trajectories.evaluation.verdicts import try_outcome_of
from trajectories.ingest.batch import validation_error_dict
from trajectories.ingest.record import built_stored, trajectory_build
from trajectories.ingest.schemas import TrajectoryIn
from trajectories.models import Label

TASK_ID_PREFIX = "eval:"  # an evaluation try's trajectory task_id: "eval:<task key>", never a real task's id
MEMORY_ARMS = (ArmKind.CANDIDATE, ArmKind.PRODUCTION)  # the arms served a memory block


@dataclass
class Served:
    """What an arm serves for a task: the items with their scores, the block, its estimated tokens."""

    memories: list[dict] = field(default_factory=list)
    system_block: str = ""
    tokens: int = 0


def _served(result: RetrievalResult) -> Served:
    memories = [
        {
            "id": str(item.public_id),
            "title": item.title,
            "description": item.description,
            "content": item.content,
            "score": round(score, 4),
        }
        for item, score in result.items
    ]
    return Served(memories, result.system_block, token_estimate(result.system_block))


def _serve(run: EvalRun, task: EvalTask, number: int | None) -> Served:
    """What release ``number`` serves for ``task`` (None: production's approved set), its own lessons left out.
    Raises Unavailable when the embedding model cannot be loaded (the claim is not made)."""
    if not task.text.strip():
        return Served()  # nothing to search with: nothing served
    try:
        result = retrieval_preview(
            bank=run.bank,
            query=task.text,
            task_id=task.task_id,
            exclude=task_excluded_items(task),
            release=release_searched(bank=run.bank, number=number),
        )
    except EmbeddingModelError as exc:
        raise Unavailable(f"The embedding model is not available: {exc}", code="embedding_unavailable") from exc
    return _served(result)


def _control_reference(run: EvalRun) -> int | None:
    """The release whose memory block the control is given the tokens of: the candidate's, else
    production's arm, else what production serves now."""
    arms = {a.kind: a for a in run.arms.select_related("release")}
    for kind in (ArmKind.CANDIDATE, ArmKind.PRODUCTION):
        if kind in arms and arms[kind].release is not None:
            return arms[kind].release.number
    return served_release(bank=run.bank).number


def _expired_before():
    return timezone.now() - timedelta(seconds=settings.RB_EVAL_LEASE_SECONDS)


def try_claim(*, run: EvalRun, token: ApiToken | None = None) -> EvalAttempt | None:
    """Claim ``run``'s next try: the first pending one, or a claimed one whose lease
    (RB_EVAL_LEASE_SECONDS) ran out, in plan order; concurrent harnesses never get the same one
    (SKIP LOCKED). A memory arm's try carries what its pinned release serves for the task
    (``served``, ``memory_tokens``; the claim's ``memories`` and ``system_block``); the control's,
    ``extra_tokens``: the tokens of the block the candidate's (else production's) release would
    serve. None when nothing is left to claim (every try recorded, or the rest claimed by others).
    Raises Conflict ``evaluation_finished`` for a cancelled run."""
    if run.state == RunState.CANCELLED:
        raise Conflict("This evaluation run was cancelled: it takes no more tries.", code="evaluation_finished")
    if run.state == RunState.FINISHED:
        return None
    with transaction.atomic():
        attempt = (
            EvalAttempt.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("task", "arm__release")
            .filter(run=run)
            .filter(Q(state=AttemptState.PENDING) | Q(state=AttemptState.CLAIMED, claimed_at__lt=_expired_before()))
            .order_by("id")
            .first()
        )
        if attempt is None:
            return None
        served = Served()
        extra = 0
        if attempt.arm.kind in MEMORY_ARMS:
            served = _serve(run, attempt.task, attempt.arm.release.number)
        elif attempt.arm.kind == ArmKind.CONTROL:
            extra = _serve(run, attempt.task, _control_reference(run)).tokens
        now = timezone.now()
        attempt.state, attempt.claimed_at = AttemptState.CLAIMED, now
        attempt.served = [{"id": m["id"], "score": m["score"]} for m in served.memories]
        attempt.memory_tokens, attempt.extra_tokens = served.tokens, extra
        attempt.save(update_fields=["state", "claimed_at", "served", "memory_tokens", "extra_tokens"])
        EvalRun.objects.filter(pk=run.pk).update(last_activity_at=now)
    attempt.memories, attempt.system_block = served.memories, served.system_block
    return attempt


# What a try's body may carry: the trajectory API's own fields (validated by TrajectoryIn), usage included.
TRY_FIELDS = ("steps", "messages", "system", "final_answer", "outcome", "usage", "metadata")


def _trajectory_payload(attempt: EvalAttempt, payload: dict) -> TrajectoryIn:
    """The try's body as the trajectory API's input (its formats, limits, usage and messages).
    Raises Invalid naming every field in error."""
    unknown = sorted(set(payload) - set(TRY_FIELDS))
    if unknown:
        raise Invalid(
            f"{', '.join(unknown)}: not a field of a try; send {', '.join(TRY_FIELDS)}.",
            code="validation_error",
        )
    metadata = payload.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise Invalid("metadata: must be a JSON object.", code="validation_error")
    evaluation = {
        "run": str(attempt.run.public_id),
        "arm": attempt.arm.kind,
        "try": str(attempt.public_id),
        "number": attempt.number,
        "task": attempt.task.key,
    }
    data = {key: payload[key] for key in TRY_FIELDS if key in payload and key != "metadata"}
    data |= {
        "task": attempt.task.text,
        "task_id": (TASK_ID_PREFIX + attempt.task.key)[:200],
        "metadata": {**metadata, "evaluation": evaluation},
    }
    return _validated(TrajectoryIn, data)


def _validated(schema: type[pydantic.BaseModel], data):
    """``data`` as ``schema``; raises Invalid as the API reports a body's errors."""
    try:
        return schema.model_validate(data)
    except pydantic.ValidationError as exc:
        error = validation_error_dict(exc)
        errors = error["errors"]
        detail = "; ".join(f"{'.'.join(e['loc'])}: {e['msg']}" for e in errors[:5])
        raise Invalid(detail or error["detail"], code="validation_error", details={"errors": errors}) from None


def _attempt_locked(run: EvalRun, try_id) -> EvalAttempt:
    try:
        key = uuid.UUID(str(try_id))
    except ValueError:
        key = None
    attempt = (
        EvalAttempt.objects.select_for_update(of=("self",))
        .select_related("task", "arm", "run")
        .filter(run=run, public_id=key)
        .first()
        if key
        else None
    )
    if attempt is None:
        raise NotFound("No such try in this evaluation run.")
    return attempt


@transaction.atomic
def try_record(*, run: EvalRun, try_id, payload: dict, token: ApiToken | None = None) -> EvalAttempt:
    """Record what the team's agent did for the try ``try_id`` of ``run``: a trajectory (the
    trajectory API's formats and limits; ``learn=False``: judged, never distilled; task_id
    ``eval:<task key>``; metadata ``evaluation``: run, arm, try, number, task) with the agent's
    usage, and the task's check on its final answer. A try that has a check takes the check's
    result as its verdict (no judge); otherwise the agent's outcome, when the bank trusts it, else
    the LLM judge decides, as for any trajectory. The first record of a try wins, whoever claimed
    it and whenever; the record of the last try finishes the run. Nothing changes on any error:
    Conflict ``evaluation_finished`` (the run is not open), Conflict ``try_recorded``, NotFound (no
    such try), Invalid / TooLarge (the body, as POST /trajectories says)."""
    locked = EvalRun.objects.select_for_update().select_related("bank").get(pk=run.pk)
    if locked.state != RunState.OPEN:
        raise Conflict(f"This evaluation run is {locked.state}: it takes no more tries.", code="evaluation_finished")
    attempt = _attempt_locked(locked, try_id)
    if attempt.state == AttemptState.RECORDED:
        raise Conflict("This try is recorded already; a recorded try is never overwritten.", code="try_recorded")
    trajectory_in = _trajectory_payload(attempt, payload)
    built = trajectory_build(bank=locked.bank, token=token, payload=trajectory_in, input_format=None)
    t = built.trajectory
    passed = check_passes(attempt.task.success_check, t.final_answer)
    if passed is not None:  # the check decides: no judge needed
        label = Label.SUCCESS if passed else Label.FAILURE
        built.signal = (label, f"The task's check: {check_describe(attempt.task.success_check)}: {label}.")
        t.verdict, t.verdict_tier = label, VerdictTier.AGENT  # recorded as the agent's judgment: the lowest tier
    t.learn = False
    t.save(force_insert=True)
    built_stored([built], [])
    now = timezone.now()
    attempt.state, attempt.recorded_at, attempt.trajectory = AttemptState.RECORDED, now, t
    attempt.check_passed, attempt.steps = passed, t.step_count
    attempt.prompt_tokens, attempt.completion_tokens = t.prompt_tokens, t.completion_tokens
    attempt.save(
        update_fields=[
            "state",
            "recorded_at",
            "trajectory",
            "check_passed",
            "steps",
            "prompt_tokens",
            "completion_tokens",
        ]
    )
    EvalRun.objects.filter(pk=locked.pk).update(tries_recorded=F("tries_recorded") + 1, last_activity_at=now)
    finished = EvalRun.objects.filter(pk=locked.pk, state=RunState.OPEN, tries_recorded__gte=F("tries_total")).update(
        state=RunState.FINISHED, finished_at=now
    )
    if finished or t.verdict in Label.values:
        evaluation_results_refresh_later(run_ids=[locked.pk])
    return attempt


def try_outcome(attempt: EvalAttempt) -> bool | None:
    """A try's outcome: its check when the task has one, else its trajectory's verdict; None while
    neither is known (not recorded, or not judged yet)."""
    verdict = attempt.trajectory.verdict if attempt.trajectory_id else ""
    return try_outcome_of(check_passed=attempt.check_passed, verdict=verdict)
