"""Recording what agents send: one trajectory (trajectory_ingest) and what
storing it implies (its agent judgment, its retrieval's outcome counters, the
pipeline's task after commit). Work for the pipeline is enqueued by task name
after commit; this module never imports the tasks."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet
from django.db.models.functions import Coalesce

from accounts.models import ApiToken, Bank
from memories.serving.models import RetrievalEvent
from memories.serving.tallies import COUNTERS, retrieval_outcomes_apply, retrievals_lock_for_outcomes
from memories.trust.models import VerdictTier
from reasoningbank_site.errors import Conflict, DomainError, Invalid, RateLimited, TooLarge
from trajectories.ingest.normalize import inferred_final_answer, normalize_trajectory
from trajectories.ingest.quotas import ingest_quota_check
from trajectories.ingest.schemas import TrajectoryIn
from trajectories.ingest.shared import NormalizeError
from trajectories.ingest.usage import messages_usage
from trajectories.judging.verdicts import outcome_counters
from trajectories.models import Judgment, JudgmentSource, Label, Trajectory
from trajectories.pipeline.dispatch import trajectories_enqueue

log = logging.getLogger(__name__)

EXTERNAL_ID_CONSTRAINT = "trajectory_unique_bank_external_id"


def _agent_label(*, bank: Bank, outcome: str | None, reward: float | None) -> tuple[str, str] | None:
    """The trusted agent signal as (label, rationale), or None."""
    if not bank.trust_agent_outcome:
        return None
    if outcome:
        return outcome, "The agent reported this outcome; the bank trusts agent outcomes."
    if reward is not None:
        label = Label.SUCCESS if reward >= bank.reward_threshold else Label.FAILURE
        relation = "≥" if label == Label.SUCCESS else "<"
        return label, f"Reward {reward:g} {relation} the bank's threshold {bank.reward_threshold:g}."
    return None


def _retrieval_for(*, bank: Bank, retrieval_id) -> RetrievalEvent | None:
    """The bank's retrieval ``retrieval_id``, locked for its outcome counters (see built_stored)."""
    if retrieval_id is None:
        return None
    found = retrievals_lock_for_outcomes(run_firsts(bank=bank, public_ids=[retrieval_id]))
    if not found:
        raise unknown_retrieval(retrieval_id)
    return found[0]


def run_firsts(*, bank: Bank, public_ids) -> QuerySet[RetrievalEvent]:
    """The bank's retrievals that carry the outcome of the retrievals
    ``public_ids``: each one's run's first retrieval (itself, for a first or
    single retrieval): a trajectory sent with a later step's retrieval_id is
    linked to its run, which counts once. A subquery, so locking the result
    locks only those rows."""
    firsts = RetrievalEvent.objects.filter(bank=bank, public_id__in=public_ids).values(first=Coalesce("run_id", "pk"))
    return RetrievalEvent.objects.filter(bank=bank, pk__in=firsts)


def unknown_retrieval(retrieval_id) -> Invalid:
    """The refusal of a retrieval_id that is not the bank's."""
    # Same answer for unknown and other banks' ids: never leak existence.
    return Invalid(
        f"retrieval_id: {retrieval_id} is not a retrieval of this bank (use the retrieval_id that /retrieve returned)."
    )


@dataclass
class BuiltTrajectory:
    """A validated, normalized trajectory not yet saved, and what saving it implies."""

    payload: TrajectoryIn
    trajectory: Trajectory
    signal: tuple[str, str] | None  # the trusted agent's (label, rationale), recorded with it


def trajectory_build(
    *, bank: Bank, token: ApiToken | None, payload: TrajectoryIn, input_format: str | None
) -> BuiltTrajectory:
    """Normalize ``payload`` into an unsaved Trajectory (verdict set from a
    trusted agent signal; the caller links the retrieval). Raises TooLarge /
    Invalid as trajectory_ingest says."""
    raw_steps = payload.steps if payload.steps is not None else payload.messages
    _check_step_count(len(raw_steps), "steps" if payload.steps is not None else "messages")
    try:
        steps, detected_format = normalize_trajectory(
            steps=payload.steps, messages=payload.messages, system=payload.system
        )
    except NormalizeError as exc:
        raise Invalid(str(exc)) from None
    try:
        usage = payload.usage or messages_usage(payload.messages)
    except NormalizeError as exc:
        raise Invalid(str(exc)) from None
    input_format = input_format or detected_format
    _check_step_count(len(steps), "steps after normalization")
    signal = _agent_label(bank=bank, outcome=payload.outcome, reward=payload.reward)
    trajectory = Trajectory(
        bank=bank,
        token=token,
        task=payload.task,
        task_id=payload.task_id,
        steps=steps,
        step_count=len(steps),
        input_format=input_format,
        final_answer=payload.final_answer or inferred_final_answer(steps, input_format),
        agent=payload.agent,
        metadata=payload.metadata,
        outcome=payload.outcome or "",
        reward=payload.reward,
        external_id=payload.external_id,
        group_id=payload.group_id,
        group_size=payload.group_size,
        verdict=signal[0] if signal else "",
        verdict_tier=VerdictTier.AGENT if signal else VerdictTier.NONE,  # the agent's own word: the lowest tier
        prompt_tokens=usage["prompt_tokens"] if usage else None,
        completion_tokens=usage["completion_tokens"] if usage else None,
    )
    return BuiltTrajectory(payload=payload, trajectory=trajectory, signal=signal)


def _outcome_changes(built: list[BuiltTrajectory]) -> dict[int, dict[str, int]]:
    """What storing ``built`` adds to each linked retrieval's outcome counters:
    one linked trajectory each, and a judged one (a success or not, its steps,
    its tokens) when the agent's verdict came with it — what judgment_record would add."""
    changes: dict[int, dict[str, int]] = {}
    for b in built:
        t = b.trajectory
        if t.retrieval_id is None:
            continue
        change = changes.setdefault(t.retrieval_id, dict.fromkeys(COUNTERS, 0))
        change["linked"] += 1
        for name, value in outcome_counters(t, t.verdict).items():
            change[name] += value
    return changes


def built_stored(built: list[BuiltTrajectory], retrievals: list[RetrievalEvent]) -> None:
    """After the rows of ``built`` are inserted: their agent judgments (one
    insert), the linked retrievals' counters (``retrievals``, locked by the
    caller in primary-key order: one UPDATE, one tallies INSERT) and
    ``trajectories.process`` for each trajectory after commit
    (trajectories.pipeline.dispatch: a failed publish is left to the dispatcher)."""
    Judgment.objects.bulk_create(
        [
            Judgment(trajectory=b.trajectory, source=JudgmentSource.AGENT, label=b.signal[0], rationale=b.signal[1])
            for b in built
            if b.signal is not None
        ]
    )
    changes = _outcome_changes(built)
    retrieval_outcomes_apply(events=[r for r in retrievals if r.pk in changes], changes=changes)
    trajectories_enqueue([b.trajectory.pk for b in built])  # a failed publish leaves the rows to the dispatcher


def trajectory_ingest(
    *, bank: Bank, token: ApiToken | None, data: TrajectoryIn | dict[str, Any], input_format: str | None = None
) -> tuple[Trajectory, bool]:
    """Store one trajectory for ``bank``; return ``(trajectory, created)``.

    Promises: steps/messages are normalized (trajectories.ingest) and the
    input format recorded; a repeated ``external_id`` in the bank returns the
    existing trajectory with ``created=False`` — also when concurrent requests
    race (the unique constraint decides) and whatever else the repeat
    carries (its errors are not raised) — to the token that sent it
    (external_id_repeat); a new trajectory is committed (with
    the caller's transaction, if any) and then enqueued for
    ``trajectories.process``; a trusted agent signal
    (bank.trust_agent_outcome: ``outcome``, else ``reward`` against
    bank.reward_threshold) is recorded as an agent Judgment at once (the
    trajectory is stored with that verdict). Untrusted signals are stored but
    judge nothing. ``input_format`` labels native steps that a caller built
    from another source (``otlp``: trajectories.otlp); by default the
    detected format.

    Raises pydantic.ValidationError when ``data`` is a dict that does not fit
    TrajectoryIn; RateLimited ``ingest_quota_exceeded`` past the token's daily
    quota (recording.quotas; a repeated external_id is answered as a repeat
    even then); TooLarge ``too_many_steps`` beyond settings.RB_MAX_STEPS;
    Invalid for steps/messages that cannot be
    normalized or a retrieval_id that is not this bank's. A retrieval_id of
    a later step of a run links the run's first retrieval.
    """
    payload = data if isinstance(data, TrajectoryIn) else TrajectoryIn.model_validate(data)
    try:
        ingest_quota_check(bank=bank, token=token)
    except RateLimited:  # a repeat stores nothing, so it costs no quota: it is answered as one
        existing = _by_external_id(bank, payload.external_id)
        if existing is None:
            raise
        return external_id_repeat(existing, token), False
    try:
        built = trajectory_build(bank=bank, token=token, payload=payload, input_format=input_format)
    except DomainError:  # a repeated external_id is answered as such, whatever the repeat carries
        existing = _by_external_id(bank, payload.external_id)
        if existing is None:
            raise
        return external_id_repeat(existing, token), False
    try:
        if payload.retrieval_id is None and built.signal is None:
            # Nothing else to write: one statement, committed before the enqueue.
            _insert_alone(built.trajectory)
            built_stored([built], [])
            return built.trajectory, True
        with transaction.atomic():
            try:
                retrieval = _retrieval_for(bank=bank, retrieval_id=payload.retrieval_id)
            except DomainError:
                existing = _by_external_id(bank, payload.external_id)
                if existing is None:
                    raise
                return external_id_repeat(existing, token), False
            built.trajectory.retrieval_id = retrieval.pk if retrieval else None
            built.trajectory.save(force_insert=True)
            built_stored([built], [retrieval] if retrieval else [])
            return built.trajectory, True
    except IntegrityError as exc:
        # A repeated external_id (a row committed before, or by a concurrent request that committed first):
        # what this call wrote is rolled back, and the existing row answers.
        if not _external_id_taken(exc):
            raise
        existing = _by_external_id(bank, payload.external_id)
        if existing is None:  # deleted since it was found taken: as Trajectory.objects.get raises
            raise Trajectory.DoesNotExist("Trajectory matching query does not exist.") from exc
        return external_id_repeat(existing, token), False


def external_id_repeat(existing: Trajectory, token: ApiToken | None) -> Trajectory:
    """The run a repeated external_id names, for the token that first sent it. An
    external_id belongs to that token: another token's repeat raises Conflict
    ``external_id_taken``, which never shows the run's id."""
    if existing.token_id != (token.pk if token else None):
        raise Conflict(
            f"The external_id {existing.external_id!r} is already used in this bank by another token; "
            "send a different external_id.",
            code="external_id_taken",
        )
    return existing


def _insert_alone(trajectory: Trajectory) -> None:
    """Insert ``trajectory`` in one statement; inside a caller's transaction,
    in a savepoint when its external_id may be taken (the IntegrityError then
    leaves the caller's transaction usable)."""
    if trajectory.external_id and connection.in_atomic_block:
        with transaction.atomic():
            trajectory.save(force_insert=True)
    else:
        trajectory.save(force_insert=True)


def _external_id_taken(exc: IntegrityError) -> bool:
    """Whether ``exc`` is the violation of the bank's unique external_id (another constraint's is a bug)."""
    diag = getattr(exc.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None) == EXTERNAL_ID_CONSTRAINT


def _by_external_id(bank: Bank, external_id: str | None) -> Trajectory | None:
    if not external_id:
        return None
    return Trajectory.objects.filter(bank=bank, external_id=external_id).first()


def _check_step_count(count: int, what: str) -> None:
    limit = settings.RB_MAX_STEPS
    if count > limit:
        raise TooLarge(
            f"The trajectory has {count} {what}; the limit is {limit} (RB_MAX_STEPS). "
            "Send a shorter trajectory or split the run.",
            code="too_many_steps",
        )
