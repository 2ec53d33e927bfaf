"""Recording a batch of trajectories in one request: each item answered as
trajectory_ingest would answer it, the new rows inserted together."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

import pydantic
from django.conf import settings
from django.db import DatabaseError, transaction

from accounts.models import ApiToken, Bank
from memories.serving.models import RetrievalEvent
from memories.serving.tallies import retrievals_lock_for_outcomes
from reasoningbank_site.analyze import analyze_after_bulk_write
from reasoningbank_site.errors import DomainError, Invalid, TooLarge
from trajectories.ingest.quotas import ingest_quota_check
from trajectories.ingest.record import (
    BuiltTrajectory,
    built_stored,
    external_id_repeat,
    run_firsts,
    trajectory_build,
    trajectory_ingest,
    unknown_retrieval,
)
from trajectories.ingest.schemas import TrajectoryIn
from trajectories.models import Judgment, Trajectory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchItemResult:
    index: int
    trajectory: Trajectory | None = None
    created: bool = False
    error: dict | None = None  # {"detail", "code", "errors"?}

    @property
    def ok(self) -> bool:
        return self.error is None


def validation_error_dict(exc: pydantic.ValidationError) -> dict:
    """A refused item's error as the API reports it: a summary, ``validation_error``, and each error."""
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
        return BatchItemResult(index=index, error=validation_error_dict(exc))
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
    (nothing stored), Invalid for an empty batch, and RateLimited
    ``ingest_quota_exceeded`` when the batch's new trajectories (repeated
    external_ids are not new) would take the token past its daily quota
    (nothing stored)."""
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
    built: list[tuple[int, BuiltTrajectory]] = []
    for index, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise Invalid(f"must be an object, got {type(item).__name__}")
            payload = TrajectoryIn.model_validate(item)
            b = trajectory_build(bank=bank, token=token, payload=payload, input_format=None)
            if payload.retrieval_id is not None:
                retrieval = retrievals.get(payload.retrieval_id)
                if retrieval is None:
                    raise unknown_retrieval(payload.retrieval_id)
                b.trajectory.retrieval_id = retrieval.pk
            built.append((index, b))
        except Exception as exc:
            results[index] = _item_error(index, exc)

    external_ids = {b.payload.external_id for _i, b in built if b.payload.external_id}
    known = {t.external_id: t for t in Trajectory.objects.filter(bank=bank, external_id__in=external_ids)}
    new: list[tuple[int, BuiltTrajectory]] = []
    repeats: list[tuple[int, str]] = []  # an external_id sent earlier in this batch
    seen: set[str] = set()
    for index, b in built:
        external_id = b.payload.external_id
        if external_id in known:
            try:
                results[index] = BatchItemResult(
                    index=index, trajectory=external_id_repeat(known[external_id], token), created=False
                )
            except DomainError as exc:
                results[index] = _item_error(index, exc)
        elif external_id in seen:
            repeats.append((index, external_id))
        else:
            new.append((index, b))
            if external_id:
                seen.add(external_id)
    ingest_quota_check(bank=bank, token=token, n=len(new), batch=True)  # repeats store nothing: no cost
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
    built_stored([b for _i, b in new], list({r.pk: r for r in retrievals.values()}.values()))  # one per run
    analyze_after_bulk_write([Trajectory, Judgment], rows=len(new))  # after commit, when it is a bulk
    by_external_id = {b.payload.external_id: b.trajectory for _i, b in new if b.payload.external_id}
    for index, b in new:
        results[index] = BatchItemResult(index=index, trajectory=b.trajectory, created=True)
    for index, external_id in repeats:
        results[index] = BatchItemResult(index=index, trajectory=by_external_id[external_id], created=False)
    return [results[i] for i in range(len(items))]


def _lock_linked_retrievals(*, bank: Bank, items: list[Any]) -> dict[uuid.UUID, RetrievalEvent]:
    """Lock the retrievals a batch links, in primary-key order, before any item
    does: linking updates a retrieval's outcome counters under its row lock,
    and two batches taking the same rows in different orders would deadlock.
    Returns the bank's retrievals found (loaded
    for their counters), by public id; a later step of a run answers with its
    run's first retrieval (see run_firsts). Unknown or malformed ids are left to the items."""
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
    firsts = {r.public_id: r for r in retrievals_lock_for_outcomes(run_firsts(bank=bank, public_ids=ids))}
    if ids - firsts.keys():  # later steps of runs: each answers with its run's first retrieval
        by_pk = {r.pk: r for r in firsts.values()}
        later = RetrievalEvent.objects.filter(bank=bank, public_id__in=ids - firsts.keys(), run__isnull=False)
        firsts.update(
            (public_id, by_pk[run]) for public_id, run in later.values_list("public_id", "run_id") if run in by_pk
        )
    return firsts
