"""Writes for trajectories: ingestion (one or a batch), judgments, and a
human relabel. Work for the pipeline is enqueued by task name after commit
(``enqueue_on_commit``); this module never imports trajectories.tasks."""

from __future__ import annotations

import functools
import logging
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pydantic
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.models import ApiToken, Bank
from accounts.services import audit_record
from memories.models import ItemOrigin, ItemStatus, MemoryItem, RetrievalEvent
from memories.services import (
    memory_item_flag,
    memory_item_supersede,
    retrieval_logs_awaited,
    retrieval_outcome_change,
    retrieval_outcomes_apply,
    retrieval_tallies_rebuild,
    retrievals_lock_for_outcomes,
    retrievals_locked_for_outcomes,
)
from reasoningbank_site.celery import enqueue_on_commit
from reasoningbank_site.db import insert_together, insert_unless_taken, instances_fetched
from reasoningbank_site.errors import DomainError, Invalid, TooLarge
from reasoningbank_site.text import counted
from trajectories import otlp
from trajectories.dispatch import trajectories_enqueue, trajectory_enqueue
from trajectories.ingest import NormalizeError, inferred_final_answer, normalize_trajectory
from trajectories.models import InputFormat, Judgment, JudgmentSource, Label, Status, TraceSpan, Trajectory
from trajectories.schemas import TrajectoryIn
from trajectories.transitions import trajectory_move, trajectory_move_many

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
    """The bank's retrieval ``retrieval_id``, locked for its outcome counters (see _stored)."""
    if retrieval_id is None:
        return None
    # As retrievals_lock_for_outcomes reads it, by its statement compiled once (issue 14); a retrieval
    # answered a moment ago may not be logged yet (retrieval_logs_awaited).
    found = retrieval_logs_awaited(
        [retrieval_id],
        lambda ids: {
            r.public_id: r for r in instances_fetched(RetrievalEvent, _retrieval_lock_sql(), (bank.pk, retrieval_id))
        },
    )
    if not found:
        raise _unknown_retrieval(retrieval_id)
    return found[retrieval_id]


def _retrieval_lock_queryset(bank_id: int, public_id: uuid.UUID):
    return retrievals_locked_for_outcomes(RetrievalEvent.objects.filter(bank_id=bank_id, public_id=public_id))


@functools.cache
def _retrieval_lock_sql() -> str:
    """A bank's retrieval by its public id, locked for its outcome counters: the statement the ORM writes,
    compiled once (issue 14)."""
    return _retrieval_lock_queryset(0, uuid.UUID(int=0)).query.sql_with_params()[0]


def _unknown_retrieval(retrieval_id) -> Invalid:
    # Same answer for unknown and other banks' ids: never leak existence.
    return Invalid(
        f"retrieval_id: {retrieval_id} is not a retrieval of this bank (use the retrieval_id that /retrieve returned)."
    )


@dataclass
class _Built:
    """A validated, normalized trajectory not yet saved, and what saving it implies."""

    payload: TrajectoryIn
    trajectory: Trajectory
    signal: tuple[str, str] | None  # the trusted agent's (label, rationale), recorded with it


def _trajectory_build(*, bank: Bank, token: ApiToken | None, payload: TrajectoryIn, input_format: str | None) -> _Built:
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
    )
    return _Built(payload=payload, trajectory=trajectory, signal=signal)


def _outcome_changes(built: list[_Built]) -> dict[int, dict[str, int]]:
    """What storing ``built`` adds to each linked retrieval's outcome counters:
    one linked trajectory each, and a judged one (a success or not, its steps)
    when the agent's verdict came with it — what judgment_record would add."""
    changes: dict[int, dict[str, int]] = {}
    for b in built:
        t = b.trajectory
        if t.retrieval_id is None:
            continue
        change = changes.setdefault(t.retrieval_id, {"linked": 0, "judged": 0, "successes": 0, "steps": 0})
        change["linked"] += 1
        if t.verdict in Label.values:
            change["judged"] += 1
            change["successes"] += int(t.verdict == Label.SUCCESS)
            change["steps"] += t.step_count
    return changes


def _stored(built: list[_Built], retrievals: list[RetrievalEvent]) -> None:
    """After the rows of ``built`` are inserted: their agent judgments (one
    insert), the linked retrievals' counters (``retrievals``, locked by the
    caller in primary-key order: one UPDATE, one tallies INSERT) and
    ``trajectories.process`` for each trajectory after commit
    (trajectories.dispatch: a failed publish is left to the dispatcher)."""
    insert_together(  # as bulk_create, its statement compiled once per number of rows (issue 14)
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

    Promises: steps/messages are normalized (trajectories.normalize) and the
    input format recorded; a repeated ``external_id`` in the bank returns the
    existing trajectory with ``created=False`` — also when concurrent requests
    race (the unique constraint decides) and whatever else the repeat
    carries (its errors are not raised); a new trajectory is committed (with
    the caller's transaction, if any) and then enqueued for
    ``trajectories.process``; a trusted agent signal
    (bank.trust_agent_outcome: ``outcome``, else ``reward`` against
    bank.reward_threshold) is recorded as an agent Judgment at once (the
    trajectory is stored with that verdict). Untrusted signals are stored but
    judge nothing. ``input_format`` labels native steps that a caller built
    from another source (``otlp``: trajectories.otlp); by default the
    detected format.

    Raises pydantic.ValidationError when ``data`` is a dict that does not fit
    TrajectoryIn; TooLarge ``too_many_steps`` beyond settings.RB_MAX_STEPS;
    Invalid for steps/messages that cannot be
    normalized or a retrieval_id that is not this bank's.
    """
    payload = data if isinstance(data, TrajectoryIn) else TrajectoryIn.model_validate(data)
    try:
        built = _trajectory_build(bank=bank, token=token, payload=payload, input_format=input_format)
    except DomainError:  # a repeated external_id is answered as such, whatever the repeat carries
        existing = _by_external_id(bank, payload.external_id)
        if existing is None:
            raise
        return existing, False
    if payload.retrieval_id is None and built.signal is None:
        # Nothing else to write (issue 14): one statement, atomic on its own, committed before the enqueue.
        return _inserted(bank, built, [])
    with transaction.atomic():
        try:
            retrieval = _retrieval_for(bank=bank, retrieval_id=payload.retrieval_id)
        except DomainError:
            existing = _by_external_id(bank, payload.external_id)
            if existing is None:
                raise
            return existing, False
        built.trajectory.retrieval_id = retrieval.pk if retrieval else None
        return _inserted(bank, built, [retrieval] if retrieval else [])


def _by_external_id(bank: Bank, external_id: str | None) -> Trajectory | None:
    if not external_id:
        return None
    # As .first() reads it, by its statement compiled once (issue 14).
    found = instances_fetched(Trajectory, _by_external_id_sql(), (bank.pk, external_id))
    return found[0] if found else None


def _inserted(bank: Bank, built: _Built, retrievals: list[RetrievalEvent]) -> tuple[Trajectory, bool]:
    """Insert ``built`` (its retrieval, if any, among ``retrievals``, locked) and what it implies
    (_stored); a repeated external_id (a row committed before, or by a concurrent request that
    commits first) inserts nothing and returns the existing row, not created."""
    external_id = built.payload.external_id
    if external_id:
        # One statement instead of a lookup and a savepoint around the insert (issue 14).
        if not insert_unless_taken(built.trajectory, EXTERNAL_ID_CONSTRAINT):
            existing = _by_external_id(bank, external_id)
            if existing is None:  # deleted since it was found taken: as Trajectory.objects.get raises
                raise Trajectory.DoesNotExist("Trajectory matching query does not exist.")
            return existing, False
    else:
        insert_together([built.trajectory])  # as save(force_insert=True), its statement compiled once
    _stored([built], retrievals)
    return built.trajectory, True


def _by_external_id_queryset(bank_id: int, external_id: str):
    """What ``Trajectory.objects.filter(bank=…, external_id=…).first()`` runs (the model has no ordering)."""
    return Trajectory.objects.filter(bank_id=bank_id, external_id=external_id).order_by("pk")[:1]


@functools.cache
def _by_external_id_sql() -> str:
    """A bank's trajectory by its external_id: the statement the ORM writes, compiled once (issue 14)."""
    return _by_external_id_queryset(0, "x").query.sql_with_params()[0]


def _check_step_count(count: int, what: str) -> None:
    limit = settings.RB_MAX_STEPS
    if count > limit:
        raise TooLarge(
            f"The trajectory has {count} {what}; the limit is {limit} (RB_MAX_STEPS). "
            "Send a shorter trajectory or split the run.",
            code="too_many_steps",
        )


@dataclass(frozen=True)
class BatchItemResult:
    index: int
    trajectory: Trajectory | None = None
    created: bool = False
    error: dict | None = None  # {"detail", "code", "errors"?}

    @property
    def ok(self) -> bool:
        return self.error is None


def _validation_error_dict(exc: pydantic.ValidationError) -> dict:
    errors = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in exc.errors(include_url=False)
    ]

    def describe(e: dict) -> str:
        loc = ".".join(e["loc"])
        return f"{loc}: {e['msg']}" if loc else e["msg"]

    return {
        "detail": "; ".join(describe(e) for e in errors[:5]) or "Invalid trajectory.",
        "code": "validation_error",
        "errors": errors,
    }


def _item_error(index: int, exc: Exception) -> BatchItemResult:
    if isinstance(exc, pydantic.ValidationError):
        return BatchItemResult(index=index, error=_validation_error_dict(exc))
    if isinstance(exc, DomainError):
        return BatchItemResult(index=index, error={"detail": exc.message, "code": exc.code})
    # A bug, not an input problem: keep it visible, keep the others.
    log.error("unexpected error ingesting batch item %s", index, exc_info=exc)
    return BatchItemResult(
        index=index, error={"detail": "Internal error; it has been logged.", "code": "internal_error"}
    )


@transaction.atomic
def trajectory_ingest_batch(*, bank: Bank, token: ApiToken | None, items: list[Any]) -> list[BatchItemResult]:
    """Ingest each of ``items`` independently and return one result per item
    in order, each as trajectory_ingest would answer it (a repeated
    ``external_id``, in the bank or earlier in the batch, is the existing
    trajectory with ``created=False``). A bad item (wrong shape, too many
    steps, unknown retrieval…) is reported and never loses the others.

    The new trajectories are inserted together (a bounded number of queries
    whatever the batch size: one per linked retrieval beyond); when that
    insert fails (a concurrent request stored one of the external_ids first)
    the items are stored one by one, each in its own savepoint.

    Raises TooLarge ``batch_too_large`` beyond settings.RB_MAX_BATCH items
    (nothing stored) and Invalid for an empty batch."""
    limit = settings.RB_MAX_BATCH
    if len(items) > limit:
        raise TooLarge(
            f"The batch has {len(items)} trajectories; the limit is {limit} (RB_MAX_BATCH). Split it.",
            code="batch_too_large",
        )
    if not items:
        raise Invalid("trajectories: send at least one trajectory.")
    retrievals = _lock_linked_retrievals(bank=bank, items=items)
    results: dict[int, BatchItemResult] = {}
    built: list[tuple[int, _Built]] = []
    for index, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise Invalid(f"must be an object, got {type(item).__name__}")
            payload = TrajectoryIn.model_validate(item)
            b = _trajectory_build(bank=bank, token=token, payload=payload, input_format=None)
            if payload.retrieval_id is not None:
                retrieval = retrievals.get(payload.retrieval_id)
                if retrieval is None:
                    raise _unknown_retrieval(payload.retrieval_id)
                b.trajectory.retrieval_id = retrieval.pk
            built.append((index, b))
        except Exception as exc:
            results[index] = _item_error(index, exc)

    external_ids = {b.payload.external_id for _i, b in built if b.payload.external_id}
    known = {t.external_id: t for t in Trajectory.objects.filter(bank=bank, external_id__in=external_ids)}
    new: list[tuple[int, _Built]] = []
    repeats: list[tuple[int, str]] = []  # an external_id sent earlier in this batch
    seen: set[str] = set()
    for index, b in built:
        external_id = b.payload.external_id
        if external_id in known:
            results[index] = BatchItemResult(index=index, trajectory=known[external_id], created=False)
        elif external_id in seen:
            repeats.append((index, external_id))
        else:
            new.append((index, b))
            if external_id:
                seen.add(external_id)
    try:
        with transaction.atomic():
            Trajectory.objects.bulk_create([b.trajectory for _i, b in new])
    except DatabaseError:
        # A concurrent request stored one of these external_ids first (or one row is refused):
        # store them one by one, as single POSTs would be, so each gets its own answer.
        log.info("batch insert of %s trajectories fell back to one by one", len(new))
        for index, b in [*new, *((i, None) for i, _e in repeats)]:
            try:
                with transaction.atomic():
                    payload = b.payload if b is not None else TrajectoryIn.model_validate(items[index])
                    trajectory, created = trajectory_ingest(bank=bank, token=token, data=payload)
            except Exception as exc:
                results[index] = _item_error(index, exc)
            else:
                results[index] = BatchItemResult(index=index, trajectory=trajectory, created=created)
        return [results[i] for i in range(len(items))]
    _stored([b for _i, b in new], list(retrievals.values()))
    by_external_id = {b.payload.external_id: b.trajectory for _i, b in new if b.payload.external_id}
    for index, b in new:
        results[index] = BatchItemResult(index=index, trajectory=b.trajectory, created=True)
    for index, external_id in repeats:
        results[index] = BatchItemResult(index=index, trajectory=by_external_id[external_id], created=False)
    return [results[i] for i in range(len(items))]


def _lock_linked_retrievals(*, bank: Bank, items: list[Any]) -> dict[uuid.UUID, RetrievalEvent]:
    """Lock the retrievals a batch links, in primary-key order, before any item
    does: linking updates a retrieval's outcome counters under its row lock,
    and two batches taking the same rows in different orders would deadlock
    (the pattern of issue 17). Returns the bank's retrievals found (loaded
    for their counters), by public id. Unknown or malformed ids are left to the items."""
    ids = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        try:
            ids.add(uuid.UUID(str(item.get("retrieval_id"))))
        except ValueError:
            continue
    if not ids:
        return {}
    # A retrieval answered a moment ago may not be logged yet (retrieval_logs_awaited); one that lands
    # while this waits is locked after the others, which as a rule have lower pks (inserted before it).
    return retrieval_logs_awaited(
        ids,
        lambda wanted: {
            r.public_id: r
            for r in retrievals_lock_for_outcomes(RetrievalEvent.objects.filter(bank=bank, public_id__in=wanted))
        },
    )


def _effective_verdict(judgments: list[Judgment]) -> str:
    """Latest human, else latest agent (agent judgments are only recorded when
    trusted), else latest LLM; '' when there is none."""
    for source in (JudgmentSource.HUMAN, JudgmentSource.AGENT, JudgmentSource.LLM):
        of_source = [j for j in judgments if j.source == source]
        if of_source:
            return of_source[-1].label
    return ""


def judgment_record(
    *,
    trajectory: Trajectory,
    source: str,
    label: str,
    rationale: str = "",
    model: str = "",
    prompt_version: str = "",
    author=None,
    locked: bool = False,
    save_verdict: bool = True,
) -> Judgment:
    """Append a Judgment (never overwrites one) and set ``trajectory.verdict``
    to the effective verdict: the latest human judgment, else the trusted
    agent signal, else the latest LLM judgment. The trajectory row is locked
    so concurrent judgments agree on the verdict; ``trajectory`` is updated in
    place. ``locked``: the caller read ``trajectory`` in this transaction
    with ``select_for_update`` (at least its pk, verdict, retrieval_id,
    bank_id and step_count): it is used as is, not locked and read again.
    ``save_verdict=False``: the new verdict is set on ``trajectory`` but not
    written; the caller writes it with its own update of the row (a status
    move: one UPDATE instead of two).

    An LLM judgment is keyed by (trajectory, prompt_version): recording it
    again returns the existing one unchanged (a redelivered task judges once).

    Raises ValueError for an unknown source or label (callers validate what
    users send: see trajectory_relabel)."""
    if source not in JudgmentSource.values:
        raise ValueError(f"source must be one of {JudgmentSource.values}, got {source!r}")
    if label not in Label.values:
        raise ValueError(f"label must be one of {Label.values}, got {label!r}")
    # Checked above, so nothing inside raises a refusal: inside the caller's transaction no savepoint is needed.
    with transaction.atomic(savepoint=False):
        row = (
            trajectory
            if locked
            else Trajectory.objects.select_for_update()
            .only("pk", "verdict", "retrieval_id", "bank_id", "step_count")
            .get(pk=trajectory.pk)
        )
        # Its judgments so far, read once: for the LLM's key and for the effective verdict with the new one last.
        judgments = instances_fetched(Judgment, _judgments_sql(), (int(row.pk),))
        if source == JudgmentSource.LLM:
            existing = [j for j in judgments if j.source == source and j.prompt_version == prompt_version]
            if existing:
                trajectory.verdict = row.verdict
                return min(existing, key=lambda j: j.pk)
        judgment = Judgment(
            trajectory=row,
            source=source,
            label=label,
            rationale=rationale,
            model=model,
            prompt_version=prompt_version,
            author=author,
        )
        insert_together([judgment])  # its statement compiled once (issue 14)
        verdict = _effective_verdict([*judgments, judgment])
        if verdict != row.verdict:
            if row.retrieval_id is not None:
                _retrieval_outcome_move(trajectory=row, old=row.verdict, new=verdict)
            row.verdict = verdict
            if save_verdict:
                row.save(update_fields=["verdict", "updated_at"])
        trajectory.verdict = verdict
        return judgment


def _judgments_queryset(trajectory_id: int):
    return Judgment.objects.filter(trajectory_id=trajectory_id).order_by("created_at", "id")


@functools.cache
def _judgments_sql() -> str:
    """A trajectory's judgments, oldest first: the statement the ORM writes, compiled once (issue 14)."""
    return _judgments_queryset(0).query.sql_with_params()[0]


def _retrieval_outcome_move(*, trajectory: Trajectory, old: str, new: str) -> None:
    """The one place a verdict reaches the Impact report: the trajectory's
    retrieval counts it as judged (and a success) or no longer does."""
    judged = int(new in Label.values) - int(old in Label.values)
    retrieval_outcome_change(
        retrieval_id=trajectory.retrieval_id,
        judged=judged,
        successes=int(new == Label.SUCCESS) - int(old == Label.SUCCESS),
        steps=judged * trajectory.step_count,
    )


# Each retrieval's outcome counters from its trajectories (of the same bank), for a rebuild.
_OUTCOMES_SQL = """
UPDATE {retrieval} r
SET linked = s.linked, judged = s.judged, successes = s.successes, steps = s.steps
FROM (
    SELECT r2.id,
           COUNT(t.id) AS linked,
           COUNT(t.id) FILTER (WHERE t.verdict IN (%(success)s, %(failure)s)) AS judged,
           COUNT(t.id) FILTER (WHERE t.verdict = %(success)s) AS successes,
           COALESCE(SUM(t.step_count) FILTER (WHERE t.verdict IN (%(success)s, %(failure)s)), 0) AS steps
    FROM {retrieval} r2
    LEFT JOIN {trajectory} t ON t.retrieval_id = r2.id AND t.bank_id = r2.bank_id
    WHERE r2.bank_id = %(bank)s
    GROUP BY r2.id
) s
WHERE r.id = s.id
"""


@transaction.atomic
def retrieval_outcomes_rebuild(*, bank: Bank) -> None:
    """Recompute every retrieval's outcome counters of ``bank`` from its
    trajectories' effective verdicts, then the Impact report's sums from them
    (memories.services.retrieval_tallies_rebuild): for data loaded in bulk,
    the migration that introduced them, or a repair."""
    sql = _OUTCOMES_SQL.format(retrieval=RetrievalEvent._meta.db_table, trajectory=Trajectory._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(sql, {"bank": bank.pk, "success": Label.SUCCESS.value, "failure": Label.FAILURE.value})
    retrieval_tallies_rebuild(bank_id=bank.pk)


@transaction.atomic
def trajectory_relabel(*, trajectory: Trajectory, label: str, reason: str, author) -> Judgment:
    """Record a human verdict (a new Judgment, source=human), audited as
    ``trajectory.relabel``. When it changes the effective verdict: proposed
    items distilled under the old verdict become superseded, approved ones are
    flagged for review (never deleted), and distillation reruns with the right
    prompt (enqueued after commit; for a MaTTS group member the group's
    contrast reruns) — unless retention purged its steps: then only the
    verdict and the items change. Raises Invalid for a label other than
    success/failure."""
    if label not in Label.values:
        raise Invalid(f"label must be one of {Label.values}, got {label!r}")
    t = Trajectory.objects.select_for_update().get(pk=trajectory.pk)
    old = t.verdict
    judgment = judgment_record(trajectory=t, source=JudgmentSource.HUMAN, label=label, rationale=reason, author=author)
    t.refresh_from_db()
    audit_record(
        action="trajectory.relabel",
        bank=t.bank,
        user=author,
        obj=t,
        before={"verdict": old or None},
        after={"verdict": t.verdict, "label": label, "reason": reason},
    )
    if t.verdict == old:
        return judgment
    who = getattr(author, "username", None) or "a reviewer"
    note = f"Verdict changed from {old or 'none'} to {t.verdict} by {who}" + (f": {reason}" if reason else ".")
    if t.experience_id:
        items = MemoryItem.objects.filter(experience_id=t.experience_id)
        if t.group_id:
            affected = items.filter(origin=ItemOrigin.MATTS_PARALLEL)
        else:
            affected = items.filter(verdict_label=old).exclude(origin=ItemOrigin.MATTS_PARALLEL)
        for item in affected.filter(status=ItemStatus.PROPOSED):
            memory_item_supersede(item=item, reason=note[:200])
        for item in affected.filter(status=ItemStatus.APPROVED):
            memory_item_flag(item=item, reason=note[:200])
    if _steps_purged(t):
        return judgment  # retention removed the steps: nothing left to distill again from
    if t.group_id and trajectory_move_many(
        Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id),
        from_=Status.DONE,
        to=Status.WAITING_GROUP,
        detail=f"Re-contrasting: {note}",
    ):
        enqueue_on_commit("trajectories.distill_group", t.bank_id, t.group_id, True)
        return judgment
    if t.status != Status.WAITING_GROUP:
        trajectory_move(t.pk, from_=t.status, to=Status.JUDGED, detail=f"Re-distilling: {note}")
        trajectory_enqueue(t.pk)
    return judgment


def _steps_purged(t: Trajectory) -> bool:
    """Whether the bank's retention purged the steps of ``t`` (or of a member of its MaTTS group)."""
    if t.steps_purged_at is not None:
        return True
    return bool(t.group_id) and (
        Trajectory.objects.filter(bank_id=t.bank_id, group_id=t.group_id, steps_purged_at__isnull=False).exists()
    )


# --- OpenTelemetry traces (OTLP) ------------------------------------------------------------


@dataclass
class OtlpExportResult:
    accepted: int = 0  # agent spans stored (or already stored: re-export)
    ignored: int = 0  # spans that are not agent work
    rejected: int = 0
    trajectories: list[Trajectory] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _lock_trace(*, bank: Bank, trace_id: str) -> None:
    """Serialize work on one trace of one bank until the transaction ends, so a
    root span never closes a trace while another export of its children is in flight."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"otlp:{bank.pk}:{trace_id}"])


@transaction.atomic
def otlp_spans_ingest(*, bank: Bank, token: ApiToken | None, spans: list[dict]) -> OtlpExportResult:
    """Buffer the agent spans of one OTLP export (decoded by
    trajectories.otlp.decode_export) and close every trace whose root span is
    in it: the trace becomes one trajectory (external_id = trace id).

    Promises: spans that are not agent work are counted as ignored and never
    stored; a re-exported span is stored once; spans of a trace already
    recorded are not buffered again; a span with invalid ids, or beyond
    settings.RB_MAX_STEPS spans in its trace, is rejected (counted, with the
    reason in ``warnings``). Never merges traces of different banks."""
    result = OtlpExportResult()
    by_trace: dict[str, list[dict]] = {}
    roots: set[str] = set()
    problems: dict[str, int] = {}
    for span in spans:
        problem = otlp.span_problem(span)
        if problem:
            result.rejected += 1
            problems[problem] = problems.get(problem, 0) + 1
            continue
        if otlp.is_root(span):
            roots.add(span["trace_id"])
        if not otlp.is_agent_span(span):
            result.ignored += 1
            continue
        by_trace.setdefault(span["trace_id"], []).append(span)
    result.warnings += [f"{counted(n, 'span')} rejected: {problem}." for problem, n in problems.items()]

    trace_ids = sorted(set(by_trace) | roots)
    recorded = set(
        Trajectory.objects.filter(bank=bank, external_id__in=trace_ids).values_list("external_id", flat=True)
    )
    late = 0
    for trace_id in trace_ids:  # sorted: two exports lock shared traces in the same order
        _lock_trace(bank=bank, trace_id=trace_id)
        if trace_id in recorded:
            late += len(by_trace.get(trace_id, []))
            result.accepted += len(by_trace.get(trace_id, []))
            continue
        incoming = by_trace.get(trace_id, [])
        room = settings.RB_MAX_STEPS - TraceSpan.objects.filter(bank=bank, trace_id=trace_id).count()
        if len(incoming) > max(room, 0):
            over = len(incoming) - max(room, 0)
            result.rejected += over
            result.warnings.append(
                f"{counted(over, 'span')} of trace {trace_id} rejected: a trace holds at most {settings.RB_MAX_STEPS} "
                "spans (RB_MAX_STEPS)."
            )
            incoming = incoming[: max(room, 0)]
        TraceSpan.objects.bulk_create(
            [
                TraceSpan(
                    bank=bank,
                    token=token,
                    trace_id=trace_id,
                    span_id=span["span_id"],
                    parent_span_id=span["parent_span_id"],
                    start_ns=span["start"],
                    span=span,
                )
                for span in incoming
            ],
            ignore_conflicts=True,
        )
        result.accepted += len(incoming)
        if trace_id in roots:
            trajectory, warning = otlp_trace_close(bank=bank, trace_id=trace_id, closed_by="root_span")
            if trajectory is not None:
                result.trajectories.append(trajectory)
            if warning:
                result.warnings.append(warning)
    if late:
        result.warnings.append(
            f"{counted(late, 'span')} {'belongs' if late == 1 else 'belong'} to traces already recorded as trajectories; not stored again."
        )
    return result


@transaction.atomic
def otlp_trace_close(*, bank: Bank, trace_id: str, closed_by: str, idle_since=None) -> tuple[Trajectory | None, str]:
    """Turn the buffered spans of one trace into one trajectory through
    trajectory_ingest (external_id = trace id, input_format ``otlp``) and drop
    the buffer. Returns ``(trajectory or None, warning)``: None when nothing
    was buffered, or when the trace cannot become a trajectory (the warning
    says why; the buffer is dropped all the same, so it is not retried forever).
    With ``idle_since``, a trace that received a span after that moment is left open."""
    _lock_trace(bank=bank, trace_id=trace_id)
    rows = list(TraceSpan.objects.filter(bank=bank, trace_id=trace_id).order_by("start_ns", "pk"))
    if not rows or (idle_since is not None and max(row.received_at for row in rows) > idle_since):
        return None, ""
    data = otlp.trace_to_trajectory([row.span for row in rows], trace_id=trace_id, closed_by=closed_by)
    warning = ""
    trajectory = None
    try:
        with transaction.atomic():
            trajectory, _created = trajectory_ingest(
                bank=bank, token=rows[-1].token, data=data, input_format=InputFormat.OTLP
            )
    except pydantic.ValidationError as exc:
        warning = f"Trace {trace_id} could not become a trajectory: {_validation_error_dict(exc)['detail']}"
    except DomainError as exc:
        warning = f"Trace {trace_id} could not become a trajectory: {exc.message}"
    if warning:
        log.warning("%s (bank %s)", warning, bank.pk)
    TraceSpan.objects.filter(bank=bank, trace_id=trace_id).delete()
    return trajectory, warning


def otlp_traces_close_idle(*, idle_seconds: int | None = None) -> list[tuple[int, str]]:
    """Close every buffered trace that received no span for ``idle_seconds``
    (settings.RB_OTLP_IDLE_SECONDS): its root span never came (a crashed
    agent, or a root that is not exported). Returns the (bank id, trace id)
    pairs closed; each close is its own transaction."""
    idle = settings.RB_OTLP_IDLE_SECONDS if idle_seconds is None else idle_seconds
    cutoff = timezone.now() - timedelta(seconds=idle)
    stale = (
        TraceSpan.objects.values("bank_id", "trace_id")
        .annotate(last=Max("received_at"))
        .filter(last__lte=cutoff)
        .order_by("last")
    )
    closed = []
    for row in stale:
        bank = Bank.objects.get(pk=row["bank_id"])
        trajectory, _warning = otlp_trace_close(
            bank=bank, trace_id=row["trace_id"], closed_by="idle_timeout", idle_since=cutoff
        )
        if trajectory is not None:
            closed.append((bank.pk, row["trace_id"]))
    return closed
