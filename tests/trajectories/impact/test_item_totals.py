"""The all-time per-item totals (memories.serving.item_totals): the Impact
page's all-time per-item table reads items × sides rows, not days × items,
and says exactly what the days' tallies say — after appends not compacted
yet, a compaction, a roll-up that folds appended rows, a rebuild, a change
of holdout fraction — and the upgrade builds them from the tallies."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Min
from django.test.utils import CaptureQueriesContext

from memories.items.models import MemoryItem
from memories.serving.models import RetrievalEvent, RetrievalItemTotal, RetrievalTally
from memories.serving.rollups import retrieval_tallies_roll_up, rollup_before
from memories.serving.tallies import retrieval_tallies_compact
from tests.factories import with_holdout
from tests.trajectories.impact.test_rollups import TODAY, at, history
from trajectories.impact.items import item_outcomes
from trajectories.impact.report import bank_impact, window_start
from trajectories.impact.tallies import SIDES, ItemSideSums, item_side_sums
from trajectories.judging.verdicts import judgment_record, retrieval_outcomes_rebuild
from trajectories.models import JudgmentSource, Trajectory


def per_item(sums: ItemSideSums) -> dict:
    """Each item's sides that took part: (units, Σy rounded, judged, successes)."""
    return {
        (item, side): (
            int(sums.units[i, s]),
            round(float(sums.y[i, s]), 9),
            int(sums.judged[i, s]),
            int(sums.successes[i, s]),
        )
        for i, item in enumerate(sums.items)
        for s, side in enumerate(SIDES)
        if sums.units[i, s] > 0
    }


def all_time_and_by_days(bank) -> tuple[dict, dict]:
    """The all-time per-item sums of the report's period (from the totals) and
    the same summed from the period's days' tallies (a window from the first day)."""
    report = bank_impact(bank=bank)
    first = RetrievalTally.objects.filter(bank=bank).aggregate(first=Min("day"))["first"]
    start = report.period.first_day or first
    return per_item(item_side_sums(bank, None, None, report.period)), per_item(
        item_side_sums(bank, start, None, report.period)
    )


def assert_exact(bank) -> dict:
    totals, by_days = all_time_and_by_days(bank)
    assert totals == by_days and totals
    return totals


def late_verdict(trajectories, before) -> Trajectory:
    """A judged trajectory of a triggered retrieval older than ``before``, its verdict flipped by a human."""
    old = Trajectory.objects.filter(
        pk__in=[t.pk for t in trajectories],
        retrieval__created_at__lt=before,
        retrieval__results__1__isnull=False,
        verdict__in=["success", "failure"],
    ).first()
    judgment_record(
        trajectory=old, source=JudgmentSource.HUMAN, label="failure" if old.verdict == "success" else "success"
    )
    return old


def test_all_time_item_sums_equal_the_days_tallies_through_every_writer(bank, other_bank):
    trajectories = history(bank, seed=3)
    history(other_bank, seed=4)
    rebuilt = assert_exact(bank)
    # Items × sides rows, however many days: each key of the bank's item tallies once.
    keys = RetrievalTally.objects.filter(bank=bank, item__isnull=False).values("holdout_fraction", "item", "side")
    assert RetrievalItemTotal.objects.filter(bank=bank).count() == keys.distinct().count()
    assert RetrievalTally.objects.filter(bank=bank, item__isnull=False).count() > 3 * keys.distinct().count()

    late_verdict(trajectories, at(TODAY - timedelta(days=3), 0))  # appended rows, not compacted yet
    appended = assert_exact(bank)
    assert appended != rebuilt
    assert retrieval_tallies_compact() > 0
    assert assert_exact(bank) == appended

    # A late verdict on a month old enough to roll up: the roll-up folds its appended rows, uncompacted.
    late_verdict(trajectories, at(rollup_before(TODAY), 0))
    folded = assert_exact(bank)
    assert RetrievalTally.objects.filter(bank=bank, compacted=False).exists()
    assert retrieval_tallies_roll_up() > 0
    assert not RetrievalTally.objects.filter(bank=bank, compacted=False).exists()
    assert assert_exact(bank) == folded

    retrieval_outcomes_rebuild(bank=bank)
    assert assert_exact(bank) == folded
    assert RetrievalItemTotal.objects.filter(bank=other_bank).exists()


def new_period(bank, fraction: float, when, n: int = 12) -> None:
    """``n`` retrievals recorded with ``fraction`` at ``when``, each judged."""
    with_holdout(bank, fraction)
    items = list(MemoryItem.objects.filter(bank=bank))
    for i in range(n):
        event = RetrievalEvent.objects.create(
            bank=bank,
            query=f"late {i}",
            mode="items",
            k=2,
            arm="holdout" if i % 3 == 0 else "treatment",
            results=[{"id": str(item.public_id), "score": 0.9} for item in items[i % 3 : i % 3 + 2]],
            holdout_fraction=fraction,
        )
        RetrievalEvent.objects.filter(pk=event.pk).update(created_at=when)
        Trajectory.objects.create(bank=bank, task="t", retrieval=event, verdict=["success", "failure"][i % 2])
    retrieval_outcomes_rebuild(bank=bank)


def read_tally_rows(bank) -> int:
    """Rows the all-time per-item sums of the report's period read from the tallies."""
    period = bank_impact(bank=bank).period
    with CaptureQueriesContext(connection) as queries:
        item_side_sums(bank, None, None, period)
    (query,) = [q["sql"] for q in queries.captured_queries if "item::text" in q["sql"]]
    return tally_rows_read(query.split("; ", 1)[1], None)


def test_a_period_that_starts_at_a_day_sums_only_its_days(bank):
    history(bank, seed=5, days=60)
    before = assert_exact(bank)
    new_period(bank, 0.5, at(TODAY, 23))  # the latest retrievals, with a fraction no earlier day had
    report = bank_impact(bank=bank)
    assert report.period.fraction == 0.5 and report.period.first_day is not None
    totals, by_days = all_time_and_by_days(bank)
    assert totals == by_days and totals and totals != before
    assert sum(units for units, *_ in totals.values()) == 12 * 2
    assert read_tally_rows(bank) == 0  # from the totals of its fraction

    new_period(bank, 0.3, at(TODAY + timedelta(days=1), 1))  # back to the first fraction: its days apart
    report = bank_impact(bank=bank)
    assert report.period.fraction == 0.3 and report.period.first_day is not None
    totals, by_days = all_time_and_by_days(bank)
    assert totals == by_days and sum(units for units, *_ in totals.values()) == 12 * 2
    assert read_tally_rows(bank) > 0  # the totals of 0.3 hold the earlier period too: the days are read


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 9)  # Σy summed in another order: equal to the 15th digit


def figures(bank) -> list:
    """What the Impact page shows of every window: the per-item rows."""
    seen = []
    for days in (7, 30, 90, None):
        since = window_start(days)
        seen.append(
            [
                (
                    o.public_id,
                    o.served_units,
                    round(o.served_y, 9),
                    o.withheld_units,
                    round(o.withheld_y, 9),
                    rounded(o.p_value),
                )
                for o in item_outcomes(bank=bank, since=since, report=bank_impact(bank=bank, since=since))
            ]
        )
    return seen


BEFORE = [("memories", "0039_dashbeat_merge")]


@pytest.mark.django_db(transaction=True)
def test_the_upgrade_builds_the_totals_from_the_tallies(bank, other_bank):
    trajectories = history(bank, seed=6)
    history(other_bank, seed=7)
    late_verdict(trajectories, at(TODAY - timedelta(days=3), 0))  # appended rows the upgrade leaves appended
    shown, total_rows = figures(bank), RetrievalTally.objects.count()
    assert shown[-1]
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(BEFORE)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass('memories_retrievalitemtotal')")
            assert cursor.fetchone() == (None,)
    finally:
        call_command("migrate", verbosity=0)
    assert RetrievalTally.objects.count() == total_rows
    compacted = RetrievalTally.objects.filter(item__isnull=False, compacted=True)
    assert (
        RetrievalItemTotal.objects.count()
        == compacted.values("bank", "holdout_fraction", "item", "side").distinct().count()
    )
    assert figures(bank) == shown
    assert_exact(bank)
    assert_exact(other_bank)


def tally_rows_read(sql: str, params) -> int:
    """Rows the statement reads from the daily tallies (EXPLAIN ANALYZE's scans of the table)."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = plan if isinstance(plan, list) else json.loads(plan)
    nodes, read = [plan[0]["Plan"]], 0
    while nodes:
        node = nodes.pop()
        if node.get("Relation Name") == RetrievalTally._meta.db_table:
            read += node["Actual Rows"] * node.get("Actual Loops", 1)
        nodes += node.get("Plans", [])
    return read


def test_the_all_time_item_sums_read_no_compacted_tally_row(bank):
    history(bank, seed=8)
    assert not RetrievalTally.objects.filter(bank=bank, compacted=False).exists()
    assert read_tally_rows(bank) == 0
