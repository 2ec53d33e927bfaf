"""The Impact tallies' monthly roll-ups (memories.serving.rollups): the
report and the API say exactly the same before and after old months are
rolled up, no sum is lost, a late verdict on a rolled-up month still
counts, holdout periods stay apart, and the report's reads are index-driven
with enough memory for their aggregate."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, time, timedelta

from django.db import connection
from django.db.models import Sum

from memories.serving.models import RetrievalEvent, RetrievalTally
from memories.serving.rollups import ROLLUP_AFTER_DAYS, month_end, retrieval_tallies_roll_up, rollup_before
from memories.serving.tallies import SUMS, retrieval_tallies_compact
from memories.tasks import retrieval_tallies_compact_task
from tests import factories
from tests.factories import make_items, with_holdout
from trajectories.impact.items import item_outcomes
from trajectories.impact.report import bank_impact, window_start
from trajectories.impact.tallies import report_rows
from trajectories.judging.verdicts import judgment_record, retrieval_outcomes_rebuild
from trajectories.models import JudgmentSource, Trajectory

TODAY = datetime.now(UTC).date()


def at(day: date, hour: int) -> datetime:
    return datetime.combine(day, time(hour), tzinfo=UTC)


def history(bank, seed: int, days: int = 240) -> list[Trajectory]:
    """Retrievals spread over ``days`` days (per-item randomisation on, a
    holdout arm), each with 0–3 linked trajectories, summed by the rebuild."""
    rng = random.Random(seed)
    with_holdout(bank, 0.3)
    bank.item_holdout_fraction = 0.3
    bank.save(update_fields=["item_holdout_fraction"])
    items = make_items(bank, 4)
    events, stamps = [], []
    for n in range(160):
        candidates = rng.sample(items, 2) if n % 10 else []
        arm = "holdout" if rng.random() < 0.3 else "treatment"
        withheld = [i for i in candidates if arm == "treatment" and rng.random() < 0.3]
        events.append(
            RetrievalEvent(
                bank=bank,
                query=f"task {n}",
                mode="items",
                k=2,
                arm=arm,
                results=[{"id": str(i.public_id), "score": 0.9} for i in candidates],
                withheld=[str(i.public_id) for i in withheld],
                holdout_fraction=0.3,
                item_holdout_fraction=0.3,
            )
        )
        stamps.append(at(TODAY - timedelta(days=rng.randrange(days)), rng.randrange(24)))
    events = RetrievalEvent.objects.bulk_create(events)
    for event, stamp in zip(events, stamps):
        RetrievalEvent.objects.filter(pk=event.pk).update(created_at=stamp)
    trajectories = Trajectory.objects.bulk_create(
        Trajectory(bank=bank, task="t", retrieval=e, verdict=rng.choice(["success", "failure", ""]), status="done")
        for e in events
        for _ in range(rng.choice([0, 1, 1, 2, 3]))
    )
    retrieval_outcomes_rebuild(bank=bank)
    return trajectories


def figures(client, bank, secret) -> dict:
    """What a user reads: the report and its items for each window, and the API's JSON."""
    seen = {}
    for days in (7, 30, 90, 120, None):
        report = bank_impact(bank=bank, since=window_start(days))
        items = item_outcomes(bank=bank, since=window_start(days), report=report)
        seen[f"report {days}"] = (
            [
                (a.retrievals, a.triggered, a.units, round(a.y_sum, 9), round(a.y_sq_sum, 9), a.judged, a.successes)
                for a in (report.treatment, report.holdout)
            ],
            report.verdict,
            report.period.excluded,
            [(o.public_id, o.served_units, round(o.served_y, 9), o.withheld_units, o.withheld_judged) for o in items],
        )
        query = f"?days={days}" if days else ""
        response = client.get(f"/api/v1/impact{query}", HTTP_AUTHORIZATION=f"Bearer {secret}")
        assert response.status_code == 200, response.content
        seen[f"api {days}"] = rounded(response.json())
    return seen


def rounded(value):
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def sums(bank) -> dict:
    """Every sum per arm, item and side: what no roll-up may lose."""
    rows = RetrievalTally.objects.filter(bank=bank).values("arm", "item", "side").annotate(**{n: Sum(n) for n in SUMS})
    return {(r["arm"], r["item"], r["side"]): tuple(round(r[n], 9) for n in SUMS) for r in rows}


def test_rolling_up_old_months_changes_no_figure_and_loses_no_sum(client, bank, other_bank):
    trajectories = history(bank, seed=1)
    history(other_bank, seed=2)
    secret = factories.make_token(bank, scopes=("retrieve",))
    before, totals, rows = figures(client, bank, secret), sums(bank), RetrievalTally.objects.filter(bank=bank).count()
    assert before["report None"][0][0][2] > 0 and before["report None"][3]  # judged retrievals, items compared

    assert retrieval_tallies_roll_up() > 0
    monthly = RetrievalTally.objects.filter(bank=bank, monthly=True)
    assert monthly.exists() and not RetrievalTally.objects.filter(monthly=False, day__lt=rollup_before(TODAY)).exists()
    assert all(day == month_end(day) for day in monthly.values_list("day", flat=True))
    assert RetrievalTally.objects.filter(bank=bank).count() < rows
    assert figures(client, bank, secret) == before
    assert sums(bank) == totals

    # A late human verdict on an old retrieval appends a daily row; the next run folds it into its month.
    old = Trajectory.objects.filter(
        pk__in=[t.pk for t in trajectories],
        retrieval__created_at__lt=at(rollup_before(TODAY), 0),
        retrieval__results__1__isnull=False,  # a triggered retrieval (two candidates)
        verdict__in=["success", "failure"],
    ).first()
    judgment_record(
        trajectory=old, source=JudgmentSource.HUMAN, label="failure" if old.verdict == "success" else "success"
    )
    changed = figures(client, bank, secret)
    assert changed != before
    retrieval_tallies_compact()
    assert retrieval_tallies_roll_up() > 0
    assert figures(client, bank, secret) == changed
    assert not RetrievalTally.objects.filter(monthly=False, day__lt=rollup_before(TODAY)).exists()
    # ... and what the roll-ups hold equals a rebuild from the retrievals.
    rolled = sums(bank)
    retrieval_outcomes_rebuild(bank=bank)
    assert sums(bank) == rolled


def old_month() -> date:
    """The first day of a month old enough to be rolled up."""
    return (rollup_before(TODAY) - timedelta(days=40)).replace(day=1)


def stamped(bank, fraction, when, arm="treatment", verdict="success"):
    event = RetrievalEvent.objects.create(
        bank=bank, query="q", mode="items", k=1, arm=arm, results=[{"id": "x"}], holdout_fraction=fraction
    )
    RetrievalEvent.objects.filter(pk=event.pk).update(created_at=when)
    Trajectory.objects.create(bank=bank, task="t", retrieval=event, verdict=verdict)


def test_a_period_that_starts_inside_a_rolled_up_month_keeps_its_part_of_the_month(bank):
    with_holdout(bank, 0.2)
    month = old_month()
    stamped(bank, 0.5, at(month + timedelta(days=3), 9))
    stamped(bank, 0.5, at(month + timedelta(days=10), 9))  # the last retrieval of the 0.5 period
    stamped(bank, 0.2, at(month + timedelta(days=12), 9))
    stamped(bank, 0.2, at(month + timedelta(days=20), 9), arm="holdout")
    stamped(bank, 0.2, at(TODAY - timedelta(days=2), 9), arm="holdout")
    retrieval_outcomes_rebuild(bank=bank)
    daily = bank_impact(bank=bank)
    assert daily.period.after == at(month + timedelta(days=10), 9)

    retrieval_tallies_roll_up()
    assert RetrievalTally.objects.filter(bank=bank, monthly=True, holdout_fraction=0.5).exists()
    report = bank_impact(bank=bank)
    assert report.period.fraction == 0.2 and report.period.after == daily.period.after
    assert (report.treatment.retrievals, report.holdout.retrievals, report.period.excluded) == (1, 2, 2)


def test_a_fraction_changed_and_changed_back_within_a_rolled_up_month_starts_the_period_at_the_next_month(bank):
    with_holdout(bank, 0.5)
    month = old_month()
    stamped(bank, 0.5, at(month + timedelta(days=2), 9))  # the first 0.5 period
    stamped(bank, 0.2, at(month + timedelta(days=5), 9))
    stamped(bank, 0.5, at(month + timedelta(days=8), 9))  # the second 0.5 period starts here
    stamped(bank, 0.5, at(TODAY - timedelta(days=2), 9), arm="holdout")
    retrieval_outcomes_rebuild(bank=bank)
    retrieval_tallies_roll_up()
    report = bank_impact(bank=bank)
    # The month's one 0.5 row holds both 0.5 periods, so only what follows the month is compared.
    next_month = month_end(month) + timedelta(days=1)
    assert report.period.fraction == 0.5 and report.period.after == at(next_month, 0)
    assert (report.treatment.retrievals, report.holdout.retrievals, report.period.excluded) == (0, 1, 3)


def test_rows_of_different_holdout_fractions_are_never_merged(bank):
    with_holdout(bank, 0.5)
    month = old_month()
    stamped(bank, 0.5, at(month + timedelta(days=2), 9))
    stamped(bank, 0.2, at(month + timedelta(days=5), 9))
    stamped(bank, None, at(month + timedelta(days=6), 9))
    retrieval_outcomes_rebuild(bank=bank)
    retrieval_tallies_roll_up()
    arms = RetrievalTally.objects.filter(bank=bank, item__isnull=True)
    assert sorted(arms.values_list("holdout_fraction", "retrievals", "monthly"), key=str) == [
        (0.2, 1, True),
        (0.5, 1, True),
        (None, 1, True),
    ]


def test_recent_days_are_not_rolled_up():
    assert rollup_before(date(2026, 6, 15)) == date(2026, 3, 1)
    assert date(2026, 6, 15) - rollup_before(date(2026, 6, 15)) >= timedelta(days=ROLLUP_AFTER_DAYS)


# --- The report's reads: index-driven, in memory --------------------------------------------------------------

ITEMS_SQL = """
SELECT item, side, SUM(units), SUM(y_sum), SUM(judged), SUM(successes)
FROM memories_retrievaltally WHERE bank_id = %(bank)s AND item IS NOT NULL GROUP BY item, side
"""


def seed_tallies(bank_ids: list[int], days: int, items: int) -> None:
    """Rolled-up-shaped tallies: per bank, an arm row and ``items`` item rows a day."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO memories_retrievaltally (bank_id, day, holdout_fraction, arm, item, side, retrievals,
                triggered, units, y_sum, y_sq_sum, trajectories, judged, successes, steps, usage_runs,
                usage_successes, prompt_tokens, completion_tokens, memory_blocks, memory_tokens, compacted, monthly)
            SELECT b, current_date - d, 0.1, 'treatment',
                   CASE WHEN i = 0 THEN NULL ELSE md5(b::text || '-' || i)::uuid END,
                   CASE WHEN i = 0 THEN '' ELSE 'served_r' END,
                   1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, true, false
            FROM unnest(%(banks)s::bigint[]) b, generate_series(0, %(days)s - 1) d, generate_series(0, %(items)s) i
            """,
            {"banks": bank_ids, "days": days, "items": items},
        )
        cursor.execute("ANALYZE memories_retrievaltally")


def test_the_items_sums_of_one_bank_among_many_read_an_index_of_the_bank(bank):
    others = [factories.make_bank().pk for _ in range(20)]
    seed_tallies([bank.pk], days=120, items=300)
    seed_tallies(others, days=120, items=30)
    plan = "\n".join(row[0] for row in report_rows("EXPLAIN " + ITEMS_SQL, {"bank": bank.pk}))
    # tally_bank_day_items once the table is vacuumed (an index-only scan), tally_bank_day before.
    assert "Seq Scan" not in plan and "Index Cond: (bank_id = " in plan, plan


def test_the_report_aggregates_in_memory_with_its_work_mem(bank, settings):
    seed_tallies([bank.pk], days=3, items=3000)
    settings.RB_REPORT_WORK_MEM = "64kB"
    small = "\n".join(row[0] for row in report_rows("EXPLAIN (ANALYZE) " + ITEMS_SQL, {"bank": bank.pk}))
    assert "Disk" in small, small  # a big bank's aggregate at the default 4 MB spills like this
    settings.RB_REPORT_WORK_MEM = "64MB"
    enough = "\n".join(row[0] for row in report_rows("EXPLAIN (ANALYZE) " + ITEMS_SQL, {"bank": bank.pk}))
    assert "Disk" not in enough and "temp written" not in enough, enough


def test_the_compaction_beat_task_rolls_up_an_existing_database(bank):
    """An upgraded database keeps its daily rows until the beat task's first run."""
    history(bank, seed=3)
    old = RetrievalTally.objects.filter(monthly=False, day__lt=rollup_before(TODAY))
    assert old.exists()
    assert retrieval_tallies_compact_task() >= 1
    assert not old.exists() and RetrievalTally.objects.filter(bank=bank, monthly=True).exists()
