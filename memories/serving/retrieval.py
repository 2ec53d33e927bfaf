"""The logged retrieval: the holdout arm, per-item randomisation, step-level
runs, and the event (with its tally row) written before the answer leaves."""

from __future__ import annotations

import random
import time
import uuid
from datetime import UTC

from django.db import models, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce

from accounts.models import ApiToken, Bank
from memories.serving import NO_FILTERS, RetrievalFilters, release_searched, served_release
from memories.serving.models import Arm, RetrievalEvent, RetrievalTally
from memories.serving.preview import RetrievalResult, retrieval_preview, system_block_render
from reasoningbank_site.commits import commit_without_waiting_for_disk
from reasoningbank_site.errors import NotFound
from reasoningbank_site.text import token_estimate


def retrieval_perform(
    *,
    bank: Bank,
    query: str,
    k: int | None = None,
    task_id: str = "",
    token: ApiToken | None = None,
    filters: RetrievalFilters = NO_FILTERS,
    run_id: uuid.UUID | None = None,
    include_served: bool = False,
) -> RetrievalResult:
    """Answer an agent's retrieval (see retrieval_preview) and log it. With
    probability bank.holdout_fraction the retrieval is in the holdout arm:
    nothing is served, but the event records what would have been, so lift
    can be measured; the event records the fraction it was drawn with, so
    a later change never mixes periods. In the treatment arm, each candidate
    item is then left out on its own with probability
    bank.item_holdout_fraction (per-item randomisation): the agent gets the
    others (fewer than k), and the event records which were left out, so the
    Impact page can measure each item's own effect. Writes one RetrievalEvent
    (with the ``filters``) and its RetrievalTally row and nothing else: the
    served items' counters are folded from the events later
    (``memory_items_count_served``), so concurrent retrievals of the same
    items never lock the same rows.

    With ``run_id`` (the public id of any retrieval of this bank) the
    retrieval is a later step of that retrieval's run (see
    _run_step_perform). Raises as retrieval_preview does, and NotFound for a
    ``run_id`` that is not a retrieval of this bank.

    Releases: the treatment arm is split in two when the bank has a canary:
    with probability canary_fraction (of all retrievals, after the holdout's
    share) the canary release is served, else the production release; the
    holdout records what production would have served. The event and the
    answer carry the number of the release served."""
    if run_id is not None:
        return _run_step_perform(
            bank=bank,
            query=query,
            k=k,
            task_id=task_id,
            token=token,
            filters=filters,
            run_id=run_id,
            include_served=include_served,
        )
    started = time.perf_counter()
    served = served_release(bank=bank, draw=random.random())
    result = retrieval_preview(bank=bank, query=query, k=k, task_id=task_id, filters=filters, release=served.searched)
    result.release = served.number
    recorded = [{"id": str(item.public_id), "score": score} for item, score in result.items]
    if served.held_out:
        result.arm, result.items, result.system_block = Arm.HOLDOUT, [], ""
    elif bank.item_holdout_fraction > 0 and result.items:
        _leave_out(result, [random.random() < bank.item_holdout_fraction for _ in result.items])
    result.latency_ms = (time.perf_counter() - started) * 1000.0
    result.event = _event(
        result, bank=bank, token=token, query=query, task_id=task_id, filters=filters, recorded=recorded
    )
    result.event.holdout_fraction = bank.holdout_fraction
    result.event.item_holdout_fraction = bank.item_holdout_fraction
    _retrieval_log(result.event)
    return result


def _leave_out(result: RetrievalResult, left_out: list[bool]) -> None:
    """Withhold the items of ``result`` marked in ``left_out`` (per-item randomisation)."""
    if any(left_out):
        result.withheld = [item for (item, _), out in zip(result.items, left_out) if out]
        result.items = [pair for pair, out in zip(result.items, left_out) if not out]
        result.system_block = system_block_render([item for item, _ in result.items])


def _event(
    result: RetrievalResult,
    *,
    bank: Bank,
    token: ApiToken | None,
    query: str,
    task_id: str,
    filters: RetrievalFilters,
    recorded: list[dict],
) -> RetrievalEvent:
    return RetrievalEvent(
        bank=bank,
        token=token,
        query=query.strip(),
        task_id=task_id or "",
        mode=result.mode,
        k=result.k,
        arm=result.arm,
        results=recorded,
        withheld=[str(item.public_id) for item in result.withheld],
        filters=filters.as_dict(),
        latency_ms=round(result.latency_ms, 2),
        release=result.release,
        memory_tokens=token_estimate(result.system_block) if result.system_block else 0,
    )


def _run_step_perform(
    *,
    bank: Bank,
    query: str,
    k: int | None,
    task_id: str,
    token: ApiToken | None,
    filters: RetrievalFilters,
    run_id: uuid.UUID,
    include_served: bool,
) -> RetrievalResult:
    """A later retrieval of a step-level run. It takes the arm (and the
    fractions) of the run's first retrieval, so the whole run is in one arm;
    items left out on their own earlier in the run stay left out, new
    candidates are drawn as usual, and items already served in the run (in
    the holdout arm: that would have been) are not served again unless
    ``include_served``; the run keeps the release of its first retrieval.
    Its event points to the run's first retrieval, and its tally row counts
    only its memory block: the run is one unit of the Impact report, through
    its first retrieval, which the trajectory links. The run's first
    retrieval stays locked until the step is logged, so concurrent steps of
    one run never serve the same item twice."""
    started = time.perf_counter()
    with transaction.atomic():
        first = _run_first_locked(bank=bank, run_id=run_id)
        served, withheld = _run_history(first)
        result = retrieval_preview(
            bank=bank,
            query=query,
            k=k,
            task_id=task_id,
            filters=filters,
            exclude=frozenset() if include_served else frozenset(served),
            release=release_searched(bank=bank, number=first.release),
        )
        result.release = first.release
        recorded = [{"id": str(item.public_id), "score": score} for item, score in result.items]
        fraction = first.item_holdout_fraction or 0
        if first.arm == Arm.HOLDOUT:
            result.arm, result.items, result.system_block = Arm.HOLDOUT, [], ""
        elif result.items:
            _leave_out(result, [_left_out(str(item.public_id), served, withheld, fraction) for item, _ in result.items])
        result.run_id = first.public_id
        result.latency_ms = (time.perf_counter() - started) * 1000.0
        result.event = _event(
            result, bank=bank, token=token, query=query, task_id=task_id, filters=filters, recorded=recorded
        )
        result.event.run = first
        result.event.holdout_fraction = first.holdout_fraction
        result.event.item_holdout_fraction = first.item_holdout_fraction
        result.event.save(force_insert=True)
        RetrievalTally(
            bank_id=bank.pk,
            day=tally_day(result.event),
            holdout_fraction=first.holdout_fraction,
            arm=first.arm,
            memory_blocks=1,
            memory_tokens=result.event.memory_tokens,
        ).save(force_insert=True)
    return result


def _left_out(public_id: str, served: set[str], withheld: set[str], fraction: float) -> bool:
    """Per-item randomisation within a run: an item keeps its first draw of the run."""
    if public_id in withheld:
        return True
    if public_id in served:
        return False
    return fraction > 0 and random.random() < fraction


def _run_first_locked(*, bank: Bank, run_id: uuid.UUID) -> RetrievalEvent:
    """The first retrieval of the run of retrieval ``run_id``, locked (the
    subquery's rows are not: only the first retrieval's row is)."""
    first_pk = RetrievalEvent.objects.filter(bank=bank, public_id=run_id).values(first=Coalesce("run_id", "pk"))
    first = (
        RetrievalEvent.objects.select_for_update()
        .filter(bank=bank, pk__in=first_pk)
        .only("pk", "public_id", "bank_id", "arm", "holdout_fraction", "item_holdout_fraction", "release")
        .first()
    )
    if first is None:
        # Same answer for unknown and other banks' ids: never leak existence.
        raise NotFound(
            f"run_id: {run_id} is not a retrieval of this bank (use the retrieval_id or run_id that /retrieve returned)."
        )
    return first


def _run_history(first: RetrievalEvent) -> tuple[set[str], set[str]]:
    """The item ids served so far in the run of ``first`` (in the holdout arm:
    that would have been) and those left out on their own."""
    served: set[str] = set()
    withheld: set[str] = set()
    rows = RetrievalEvent.objects.filter(Q(pk=first.pk) | Q(run_id=first.pk)).values_list("results", "withheld")
    for results, left in rows:
        left_out = {str(w) for w in left or []}
        withheld |= left_out
        served |= {str(item) for item in candidate_ids(results)} - left_out
    return served, withheld


def _retrieval_log(event: RetrievalEvent) -> None:
    """Insert ``event`` and its tally row, atomically, before the answer leaves
    (a trajectory sent right after it finds it). The commit does not wait for
    the WAL flush (``synchronous_commit`` off for this transaction only: a
    crash of the database server, not of the app, in the next few ms loses
    it whole, never half): a log is not worth a disk flush on every
    retrieval's path. Inside a caller's transaction (no savepoint: an error
    leaves that transaction anyway) the setting holds for the rest of it."""
    with transaction.atomic(savepoint=False):
        commit_without_waiting_for_disk()
        event.save(force_insert=True)
        retrieval_tally_for(event=event).save(force_insert=True)


def candidate_ids(results) -> list[uuid.UUID]:
    """The distinct item ids a retrieval served or would have served (entries
    that are not objects with a UUID ``id`` are skipped, never an error)."""
    found: list[uuid.UUID] = []
    for entry in results if isinstance(results, list) else []:
        try:
            item = uuid.UUID(str(entry.get("id", ""))) if isinstance(entry, dict) else None
        except ValueError:
            item = None
        if item is not None and item not in found:
            found.append(item)
    return found


def is_triggered(results) -> bool:
    """Served, or would have served, at least one item: a non-empty ``results``."""
    return isinstance(results, list) and len(results) > 0


def tally_day(event: RetrievalEvent):
    return event.created_at.astimezone(UTC).date()


def retrieval_tally_for(*, event: RetrievalEvent) -> RetrievalTally:
    """The arm row retrieval_tally_created appends for ``event``, unsaved
    (retrieval_perform inserts it in the event's statement)."""
    return RetrievalTally(
        bank_id=event.bank_id,
        day=tally_day(event),
        holdout_fraction=event.holdout_fraction,
        arm=event.arm,
        retrievals=1,
        triggered=int(is_triggered(event.results)),
        memory_blocks=1,
        memory_tokens=event.memory_tokens,
    )


def run_retrievals(*, first_id: int | None) -> list[RetrievalEvent]:
    """The retrievals of the run whose first retrieval has primary key
    ``first_id`` (what a trajectory links), first one first; [] for None."""
    if first_id is None:
        return []
    return list(
        RetrievalEvent.objects.filter(models.Q(pk=first_id) | models.Q(run_id=first_id))
        .order_by("pk")
        .only("pk", "public_id", "query", "arm", "results", "withheld", "created_at")
    )
