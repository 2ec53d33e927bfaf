"""The Impact report's maintained sums (RetrievalTally): what a retrieval, a
trajectory linked to it and a change of its verdict add, appended as signed
rows; their compaction (beat); and a rebuild from the retrievals' counters.
The report reads them in trajectories.impact.tallies. It lives in memories,
not in trajectories.impact, because retrieval_perform (memories) appends a
retrieval's row in the retrieval's own statement and memories never imports
trajectories.

A retrieval's outcome lives on its RetrievalEvent (``linked``, ``judged``,
``successes``, ``steps``); trajectories.judging.verdicts changes it through
``retrieval_outcome_change`` (``retrieval_outcomes_apply`` for many at once:
an ingested batch) — the one place a verdict reaches the report — with the
retrieval row locked, so the per-retrieval success share ``y`` moves
from its exact old value to its exact new one. The rows appended are keyed by
(bank, UTC day of the retrieval, holdout fraction, arm, item, side): an arm
row (item null) and, for each candidate item of a triggered retrieval, an
item row whose side says how the item took part (ItemSide)."""

from __future__ import annotations

import uuid
from collections import defaultdict

from django.db import connection, transaction
from django.db.models import QuerySet

from memories.serving.item_totals import item_totals_add, item_totals_rebuild
from memories.serving.models import Arm, ItemSide, RetrievalEvent, RetrievalTally
from memories.serving.retrieval import candidate_ids, is_triggered, retrieval_tally_for, tally_day

SUMS = (
    "retrievals", "triggered", "units", "y_sum", "y_sq_sum", "trajectories", "judged", "successes", "steps",
    "usage_runs", "usage_successes", "prompt_tokens", "completion_tokens", "memory_blocks", "memory_tokens",
)  # fmt: skip
KEY = ("bank_id", "day", "holdout_fraction", "arm", "item", "side", "monthly")
COMPACT_BATCH = 5000


def item_side(event: RetrievalEvent, item: uuid.UUID) -> str:
    if event.arm == Arm.HOLDOUT:
        return ItemSide.HOLDOUT
    if not (event.item_holdout_fraction or 0) > 0:
        return ItemSide.SERVED
    withheld = {str(w) for w in event.withheld or []}
    return ItemSide.WITHHELD_RANDOMISED if str(item) in withheld else ItemSide.SERVED_RANDOMISED


def retrieval_tally_created(*, event: RetrievalEvent) -> RetrievalTally:
    """Append the new retrieval's arm row (one retrieval; triggered when it
    had candidates)."""
    tally = retrieval_tally_for(event=event)
    tally.save(force_insert=True)
    return tally


def _y(judged: int, successes: int) -> float | None:
    return successes / judged if judged else None


# What retrieval_outcomes_apply reads of a locked retrieval.
OUTCOME_FIELDS = (
    "pk", "public_id", "bank_id", "created_at", "arm", "results", "withheld", "holdout_fraction", "item_holdout_fraction",
    "linked", "judged", "successes", "steps", "usage_runs", "usage_successes", "prompt_tokens", "completion_tokens",
)  # fmt: skip
# A retrieval's outcome counters (RetrievalEvent), each also summed in its arm's tally rows.
COUNTERS = (
    "linked", "judged", "successes", "steps", "usage_runs", "usage_successes", "prompt_tokens", "completion_tokens",
)  # fmt: skip
# The counters that only the arm's row sums (the item rows compare outcomes, not costs).
ARM_ONLY = ("steps", "usage_runs", "usage_successes", "prompt_tokens", "completion_tokens")


def trajectory_counters(
    *, judged: bool, success: bool, steps: int, prompt_tokens: int | None, completion_tokens: int | None
) -> dict[str, int]:
    """What one linked trajectory adds to its retrieval's counters besides
    ``linked``: when judged, one judged run (a success or not) and its steps;
    when it also reported token usage (either count not null), one run with
    usage, its success and its tokens (a missing count as 0). The difference
    of two of these is what a verdict change moves."""
    usage = judged and (prompt_tokens is not None or completion_tokens is not None)
    return {
        "judged": int(judged),
        "successes": int(judged and success),
        "steps": steps if judged else 0,
        "usage_runs": int(usage),
        "usage_successes": int(usage and success),
        "prompt_tokens": (prompt_tokens or 0) if usage else 0,
        "completion_tokens": (completion_tokens or 0) if usage else 0,
    }


def counters_difference(new: dict[str, int], old: dict[str, int]) -> dict[str, int]:
    return {name: new.get(name, 0) - old.get(name, 0) for name in COUNTERS}


def retrievals_lock_for_outcomes(retrievals: QuerySet[RetrievalEvent]) -> list[RetrievalEvent]:
    """Lock ``retrievals`` in primary-key order (two callers taking the same
    rows in different orders would deadlock) and load what
    retrieval_outcomes_apply reads. Call inside a transaction."""
    return list(retrievals.select_for_update().only(*OUTCOME_FIELDS).order_by("pk"))


@transaction.atomic
def retrieval_outcome_change(*, retrieval_id: int, **counters: int) -> None:
    """Add the given changes (COUNTERS by name, each 0 when not given) to a
    retrieval's outcome counters (a trajectory linked: ``linked=1``; a
    verdict set or changed: the difference of trajectory_counters) and
    append what they change in the report's sums. The retrieval
    row is locked, so concurrent judgments of one MaTTS group see each
    other's counts. A retrieval that had no candidates only keeps counters
    (the report compares triggered retrievals only). Missing retrieval: no-op."""
    unknown = set(counters) - set(COUNTERS)
    if unknown:
        raise TypeError(f"unknown outcome counters: {sorted(unknown)}")
    change = {name: counters.get(name, 0) for name in COUNTERS}
    if not any(change.values()):
        return
    events = retrievals_lock_for_outcomes(RetrievalEvent.objects.filter(pk=retrieval_id))
    retrieval_outcomes_apply(events=events, changes={retrieval_id: change})


def retrieval_outcomes_apply(*, events: list[RetrievalEvent], changes: dict[int, dict[str, int]]) -> None:
    """What retrieval_outcome_change does, for many retrievals at once: add
    ``changes`` (retrieval pk → COUNTERS by name, each optional) to the
    counters of ``events`` — rows the caller locked with
    retrievals_lock_for_outcomes in this transaction — in one UPDATE, and
    append what they change in the report's sums in one INSERT. Changes for
    a retrieval not among ``events`` (deleted) are ignored."""
    touched: list[RetrievalEvent] = []
    rows: list[RetrievalTally] = []
    for event in events:
        change = {name: changes.get(event.pk, {}).get(name, 0) for name in COUNTERS}
        if not any(change.values()):
            continue
        old_y = _y(event.judged, event.successes)
        for name in COUNTERS:
            setattr(event, name, getattr(event, name) + change[name])
        touched.append(event)
        if is_triggered(event.results):
            rows += _outcome_rows(event, old_y=old_y, **change)
    if touched:
        _counters_save(touched)
    if rows:
        RetrievalTally.objects.bulk_create(rows)


def _counters_save(events: list[RetrievalEvent]) -> None:
    """One UPDATE writing the outcome counters of ``events`` (Django's
    bulk_update builds a CASE per column and row, slow for a batch)."""
    sql = (
        f"UPDATE {RetrievalEvent._meta.db_table} AS r SET "
        + ", ".join(f"{name} = v.{name}" for name in COUNTERS)
        + f" FROM unnest(%s::bigint[], {', '.join(['%s::bigint[]'] * len(COUNTERS))})"
        + f" AS v(id, {', '.join(COUNTERS)}) WHERE r.id = v.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [[e.pk for e in events], *([getattr(e, name) for e in events] for name in COUNTERS)])


def _outcome_rows(event: RetrievalEvent, *, old_y: float | None, linked: int, **change: int) -> list[RetrievalTally]:
    """The tally rows a change of a triggered retrieval's counters appends
    (``event`` already holds the new counters; ``old_y`` is its success share before)."""
    new_y = _y(event.judged, event.successes)
    outcome = {
        "units": int(new_y is not None) - int(old_y is not None),
        "y_sum": (new_y or 0.0) - (old_y or 0.0),
        "y_sq_sum": (new_y or 0.0) ** 2 - (old_y or 0.0) ** 2,
        "judged": change["judged"],
        "successes": change["successes"],
    }
    key = {
        "bank_id": event.bank_id,
        "day": tally_day(event),
        "holdout_fraction": event.holdout_fraction,
        "arm": event.arm,
    }
    rows = [RetrievalTally(**key, **outcome, trajectories=linked, **{name: change[name] for name in ARM_ONLY})]
    if any(outcome.values()):
        rows += [
            RetrievalTally(**key, item=item, side=item_side(event, item), **outcome)
            for item in candidate_ids(event.results)
        ]
    return rows


def retrieval_tallies_compact(*, batch: int = COMPACT_BATCH) -> int:
    """Merge appended rows into one row per key (with the key's earlier merged
    row when it is not locked by a concurrent compaction) and return how many
    appended rows were merged. Rows are claimed with ``FOR UPDATE SKIP
    LOCKED``, so concurrent runs split the work; a sum is never lost or
    counted twice, and a key left with two merged rows is merged next time.
    Runs from beat."""
    merged = 0
    while True:
        with transaction.atomic():
            fresh = list(
                RetrievalTally.objects.select_for_update(skip_locked=True)
                .filter(compacted=False)
                .order_by("pk")
                .values("pk", *KEY, *SUMS)[:batch]
            )
            if not fresh:
                return merged
            keys = {tuple(row[k] for k in KEY) for row in fresh}
            earlier = (
                RetrievalTally.objects.select_for_update(skip_locked=True)
                .filter(
                    compacted=True,
                    monthly=False,  # a rolled-up month's rows are memories.serving.rollups'
                    bank_id__in={k[0] for k in keys},
                    day__in={k[1] for k in keys},
                )
                .order_by("pk")
                .values("pk", *KEY, *SUMS)
            )
            sums: dict[tuple, dict] = defaultdict(lambda: dict.fromkeys(SUMS, 0))
            claimed = []
            for row in [*fresh, *(row for row in earlier if tuple(row[k] for k in KEY) in keys)]:
                claimed.append(row["pk"])
                total = sums[tuple(row[k] for k in KEY)]
                for name in SUMS:
                    total[name] += row[name]
            item_totals_add(fresh)  # compacted now: the all-time totals hold them
            RetrievalTally.objects.filter(pk__in=claimed).delete()
            RetrievalTally.objects.bulk_create(
                RetrievalTally(**dict(zip(KEY, key)), **total, compacted=True)
                for key, total in sums.items()
                if any(total.values())
            )
            merged += len(fresh)
        if len(fresh) < batch:
            return merged


_UUID_RE = r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"

# The same rows retrieval_tally_created and retrieval_outcome_change append,
# summed in SQL from the retrievals' counters: arm rows, then item rows.
_REBUILD_SQL = """
WITH e AS (
    SELECT r.*, (r.created_at AT TIME ZONE 'UTC')::date AS day, r.run_id IS NULL AS first,
           r.run_id IS NULL AND COALESCE(jsonb_typeof(r.results) = 'array' AND jsonb_array_length(
               CASE WHEN jsonb_typeof(r.results) = 'array' THEN r.results ELSE '[]'::jsonb END) > 0, false)
               AS trig,
           CASE WHEN r.judged > 0 THEN r.successes::float / r.judged END AS y
    FROM {retrieval} r
    WHERE r.bank_id = %(bank)s  -- a run counts once, through its first retrieval; each step's memory block counts
), arms AS (
    INSERT INTO {tally} (bank_id, day, holdout_fraction, arm, item, side, retrievals, triggered, units, y_sum,
                         y_sq_sum, trajectories, judged, successes, steps, usage_runs, usage_successes,
                         prompt_tokens, completion_tokens, memory_blocks, memory_tokens, compacted, monthly)
    SELECT bank_id, day, holdout_fraction, arm, NULL, '', COUNT(*) FILTER (WHERE first), COUNT(*) FILTER (WHERE trig),
           COUNT(*) FILTER (WHERE trig AND judged > 0),
           COALESCE(SUM(y) FILTER (WHERE trig), 0), COALESCE(SUM(y * y) FILTER (WHERE trig), 0),
           COALESCE(SUM(linked) FILTER (WHERE trig), 0), COALESCE(SUM(judged) FILTER (WHERE trig), 0),
           COALESCE(SUM(successes) FILTER (WHERE trig), 0), COALESCE(SUM(steps) FILTER (WHERE trig), 0),
           COALESCE(SUM(usage_runs) FILTER (WHERE trig), 0), COALESCE(SUM(usage_successes) FILTER (WHERE trig), 0),
           COALESCE(SUM(prompt_tokens) FILTER (WHERE trig), 0),
           COALESCE(SUM(completion_tokens) FILTER (WHERE trig), 0),
           COUNT(*), COALESCE(SUM(memory_tokens), 0), true, false
    FROM e GROUP BY bank_id, day, holdout_fraction, arm
)
INSERT INTO {tally} (bank_id, day, holdout_fraction, arm, item, side, retrievals, triggered, units, y_sum, y_sq_sum,
                     trajectories, judged, successes, steps, usage_runs, usage_successes, prompt_tokens,
                     completion_tokens, memory_blocks, memory_tokens, compacted, monthly)
SELECT e.bank_id, e.day, e.holdout_fraction, e.arm, c.item::uuid,
       CASE WHEN e.arm = %(holdout)s THEN %(side_holdout)s
            WHEN NOT COALESCE(e.item_holdout_fraction, 0) > 0 THEN %(side_served)s
            WHEN jsonb_typeof(e.withheld) = 'array' AND e.withheld @> to_jsonb(c.item) THEN %(side_withheld_r)s
            ELSE %(side_served_r)s END AS side,
       0, 0, COUNT(*), SUM(e.y), SUM(e.y * e.y), 0, SUM(e.judged), SUM(e.successes), 0, 0, 0, 0, 0, 0, 0, true, false
FROM e
CROSS JOIN LATERAL (
    SELECT DISTINCT lower(elem ->> 'id') AS item
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(e.results) = 'array' THEN e.results ELSE '[]'::jsonb END) AS elem
    WHERE jsonb_typeof(elem) = 'object' AND elem ->> 'id' ~* %(uuid_re)s
) c
WHERE e.first AND e.judged > 0
GROUP BY 1, 2, 3, 4, 5, 6
"""


@transaction.atomic
def retrieval_tallies_rebuild(*, bank_id: int) -> None:
    """Replace a bank's tallies (and its all-time per-item totals) with sums computed from its retrievals'
    counters (after a bulk load, or to repair). The counters themselves are
    trajectories' to rebuild (trajectories.judging.verdicts.retrieval_outcomes_rebuild)."""
    RetrievalTally.objects.filter(bank_id=bank_id).delete()
    sql = _REBUILD_SQL.format(retrieval=RetrievalEvent._meta.db_table, tally=RetrievalTally._meta.db_table)
    params = {
        "bank": bank_id,
        "holdout": Arm.HOLDOUT.value,
        "side_holdout": ItemSide.HOLDOUT.value,
        "side_served": ItemSide.SERVED.value,
        "side_served_r": ItemSide.SERVED_RANDOMISED.value,
        "side_withheld_r": ItemSide.WITHHELD_RANDOMISED.value,
        "uuid_re": _UUID_RE,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    item_totals_rebuild(bank_id=bank_id)
