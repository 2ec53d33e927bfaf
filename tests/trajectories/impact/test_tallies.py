"""The Impact report's maintained sums (RetrievalTally) and per-item
randomisation: what the services append equals a rebuild from the stored
rows, before and after compaction; the per-item comparison uses only
retrievals where the item was randomised; a period never mixes two runs of
the same fraction within one day; and the report stays a bounded number of
queries whatever the data size."""

from __future__ import annotations

import random
from datetime import UTC, datetime, time, timedelta

import pytest

from memories.serving.models import ItemSide, RetrievalEvent, RetrievalTally
from memories.serving.tallies import retrieval_tallies_compact, retrieval_tally_created
from tests.factories import make_items, with_holdout
from trajectories.impact.items import ItemComparison, item_outcomes
from trajectories.impact.report import bank_impact, window_start
from trajectories.ingest.record import trajectory_ingest
from trajectories.judging.verdicts import judgment_record, retrieval_outcomes_rebuild
from trajectories.models import JudgmentSource, Trajectory

STEPS = [{"kind": "action", "content": "search"}, {"kind": "answer", "content": "done"}]


def snapshot(bank) -> dict:
    """What a user reads on the page: both arms, the difference, each item's sides."""
    report = bank_impact(bank=bank)
    items = item_outcomes(bank=bank, report=report)
    arms = {
        name: (s.retrievals, s.triggered, s.units, round(s.y_sum, 9), round(s.y_sq_sum, 9), s.trajectories)
        for name, s in (("treatment", report.treatment), ("holdout", report.holdout))
    }
    judged = {
        name: (s.judged, s.successes, s.steps_sum) for name, s in (("t", report.treatment), ("h", report.holdout))
    }
    per_item = {
        o.public_id: (o.served_units, round(o.served_y, 9), o.withheld_units, round(o.withheld_y, 9), o.served_judged)
        for o in items
    }
    return {
        "arms": arms,
        "judged": judged,
        "items": per_item,
        "verdict": report.verdict,
        "comparison": report.item_comparison,
    }


def live_bank(bank, seed: int):
    """Retrievals logged as retrieval_perform logs them (with per-item
    randomisation), trajectories sent through trajectory_ingest (trusted
    agent outcomes, some unjudged, MaTTS-like groups), then human relabels."""
    rng = random.Random(seed)
    with_holdout(bank, 0.3)
    bank.trust_agent_outcome = True
    bank.item_holdout_fraction = 0.3
    bank.save(update_fields=["trust_agent_outcome", "item_holdout_fraction"])
    items = make_items(bank, 4)
    trajectories = []
    for n in range(60):
        candidates = rng.sample(items, 2) if n % 10 else []  # every tenth found nothing
        arm = "holdout" if rng.random() < 0.3 else "treatment"
        withheld = [i for i in candidates if arm == "treatment" and rng.random() < 0.3]
        event = RetrievalEvent.objects.create(
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
        retrieval_tally_created(event=event)
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
            outcome = rng.choice(["success", "failure", None])
            data = {"task": f"task {n}", "steps": STEPS[: rng.randint(1, 2)], "retrieval_id": str(event.public_id)}
            trajectory, _ = trajectory_ingest(bank=bank, token=None, data={**data, "outcome": outcome})
            trajectories.append(trajectory)
    for trajectory in rng.sample(trajectories, 15):
        trajectory.refresh_from_db()
        judgment_record(
            trajectory=trajectory,
            source=JudgmentSource.HUMAN,
            label=rng.choice(["success", "failure"]),
        )
    return items


@pytest.mark.parametrize("seed", [1, 2])
def test_maintained_sums_equal_a_rebuild_before_and_after_compaction(bank, seed):
    live_bank(bank, seed)
    live = snapshot(bank)
    assert live["arms"]["treatment"][2] > 0 and live["arms"]["holdout"][2] > 0  # both arms have judged retrievals
    assert live["comparison"] == "randomised" and live["items"]
    pending = RetrievalTally.objects.filter(bank=bank, compacted=False).count()
    assert pending > 60  # appended: one row per retrieval, link and verdict change (and items)

    assert retrieval_tallies_compact() == pending
    keys = RetrievalTally.objects.filter(bank=bank).values_list("day", "holdout_fraction", "arm", "item", "side")
    assert len(keys) == len(set(keys)) and not RetrievalTally.objects.filter(compacted=False).exists()
    assert snapshot(bank) == live

    retrieval_outcomes_rebuild(bank=bank)
    assert snapshot(bank) == live
    # ... and what the rebuild reads agrees with the trajectories themselves.
    for event in RetrievalEvent.objects.filter(bank=bank):
        linked = Trajectory.objects.filter(retrieval=event)
        assert event.linked == linked.count()
        assert event.judged == linked.filter(verdict__in=["success", "failure"]).count()
        assert event.successes == linked.filter(verdict="success").count()


def test_a_second_compaction_merges_into_the_first(bank):
    with_holdout(bank, 0.5)
    event = RetrievalEvent.objects.create(
        bank=bank, query="q", mode="items", k=1, arm="treatment", results=[{"id": "x"}], holdout_fraction=0.5
    )
    retrieval_tally_created(event=event)
    retrieval_tallies_compact()
    second = RetrievalEvent.objects.create(
        bank=bank, query="q", mode="items", k=1, arm="treatment", results=[], holdout_fraction=0.5
    )
    retrieval_tally_created(event=second)
    assert retrieval_tallies_compact() == 1
    (row,) = RetrievalTally.objects.filter(bank=bank)
    assert (row.retrievals, row.triggered, row.compacted) == (2, 1, True)


def randomised_retrievals(bank, item, *, side, successes, failures, other=None):
    """Treatment retrievals with per-item randomisation on, where ``item`` was
    served or left out (``side``), each with one judged trajectory."""
    results = [{"id": str(i.public_id), "score": 0.8} for i in (item, other) if i is not None]
    verdicts = ["success"] * successes + ["failure"] * failures
    events = RetrievalEvent.objects.bulk_create(
        RetrievalEvent(
            bank=bank,
            query="q",
            mode="items",
            k=2,
            arm="treatment",
            results=results,
            withheld=[str(item.public_id)] if side == "withheld" else [],
            holdout_fraction=0.5,
            item_holdout_fraction=0.2,
        )
        for _ in verdicts
    )
    Trajectory.objects.bulk_create(
        Trajectory(bank=bank, task="t", retrieval=e, verdict=v, status="done") for e, v in zip(events, verdicts)
    )
    retrieval_outcomes_rebuild(bank=bank)


def test_per_item_randomisation_compares_served_with_left_out_and_ignores_the_holdout_arm(bank):
    with_holdout(bank, 0.5)
    hurting, neutral = make_items(bank, 2)
    randomised_retrievals(bank, hurting, side="served", successes=6, failures=24, other=neutral)
    randomised_retrievals(bank, hurting, side="withheld", successes=21, failures=9, other=neutral)
    # The holdout arm did terribly with both items as candidates: a whole-set comparison would say
    # "hurting" helps (20% served against 0%); the randomised one must not look at it.
    holdout = RetrievalEvent.objects.bulk_create(
        RetrievalEvent(
            bank=bank,
            query="q",
            mode="items",
            k=2,
            arm="holdout",
            results=[{"id": str(hurting.public_id)}, {"id": str(neutral.public_id)}],
            holdout_fraction=0.5,
            item_holdout_fraction=0.2,
        )
        for _ in range(30)
    )
    Trajectory.objects.bulk_create(Trajectory(bank=bank, task="t", retrieval=e, verdict="failure") for e in holdout)
    retrieval_outcomes_rebuild(bank=bank)

    report = bank_impact(bank=bank)
    rows = {o.public_id: o for o in item_outcomes(bank=bank, report=report)}
    assert report.item_comparison == ItemComparison.RANDOMISED
    bad = rows[hurting.public_id]
    assert (bad.served_units, bad.withheld_units) == (30, 30)  # the 30 holdout retrievals are not its "withheld"
    assert bad.difference == pytest.approx(6 / 30 - 21 / 30)
    assert bad.may_hurt and bad.high < 0
    # The other item was served in all 60 randomised retrievals and never left out: nothing to compare yet.
    assert rows[neutral.public_id].withheld_units == 0 and rows[neutral.public_id].difference is None
    assert not rows[neutral.public_id].may_hurt


def test_without_per_item_randomisation_items_are_compared_with_the_holdout_arm(bank):
    with_holdout(bank, 0.5)
    (item,) = make_items(bank, 1)
    events = RetrievalEvent.objects.bulk_create(
        RetrievalEvent(bank=bank, query="q", mode="items", k=1, arm=arm, results=[{"id": str(item.public_id)}])
        for arm in ["treatment"] * 12 + ["holdout"] * 10
    )
    Trajectory.objects.bulk_create(Trajectory(bank=bank, task="t", retrieval=e, verdict="success") for e in events)
    retrieval_outcomes_rebuild(bank=bank)
    report = bank_impact(bank=bank)
    (row,) = item_outcomes(bank=bank, report=report)
    assert report.item_comparison == ItemComparison.HOLDOUT_ARM
    assert (row.served_units, row.withheld_units) == (12, 10)
    assert RetrievalTally.objects.filter(item=item.public_id, side=ItemSide.HOLDOUT).exists()


def at(day, hour):
    return datetime.combine(day, time(hour), tzinfo=UTC)


def stamped(bank, fraction, when, arm="treatment", verdict="success"):
    event = RetrievalEvent.objects.create(
        bank=bank, query="q", mode="items", k=1, arm=arm, results=[{"id": "x"}], holdout_fraction=fraction
    )
    RetrievalEvent.objects.filter(pk=event.pk).update(created_at=when)
    Trajectory.objects.create(bank=bank, task="t", retrieval=event, verdict=verdict)
    return event


def test_a_fraction_changed_and_changed_back_within_a_day_starts_the_period_at_midnight(bank):
    with_holdout(bank, 0.5)
    day = (datetime.now(UTC) - timedelta(days=3)).date()
    stamped(bank, 0.5, at(day, 9))  # the first 0.5 period
    stamped(bank, 0.2, at(day, 10))
    stamped(bank, 0.5, at(day, 11))  # the second 0.5 period starts here, on the same day
    stamped(bank, 0.5, at(day + timedelta(days=1), 9), arm="holdout")
    retrieval_outcomes_rebuild(bank=bank)
    period = bank_impact(bank=bank).period
    # That day's tallies hold both 0.5 periods, so only the days after it are compared.
    assert period.fraction == 0.5 and period.after == at(day + timedelta(days=1), 0)
    report = bank_impact(bank=bank)
    assert (report.treatment.retrievals, report.holdout.retrievals, report.period.excluded) == (0, 1, 3)


def test_a_period_that_starts_mid_day_keeps_that_day(bank):
    with_holdout(bank, 0.2)
    day = (datetime.now(UTC) - timedelta(days=3)).date()
    stamped(bank, 0.5, at(day - timedelta(days=1), 9))
    stamped(bank, 0.5, at(day, 9))
    stamped(bank, 0.2, at(day, 11))
    stamped(bank, 0.2, at(day, 12), arm="holdout")
    retrieval_outcomes_rebuild(bank=bank)
    report = bank_impact(bank=bank)
    assert report.period.fraction == 0.2 and report.period.after == at(day, 9)
    assert (report.treatment.retrievals, report.holdout.retrievals, report.period.excluded) == (1, 1, 2)


def test_windows_start_at_midnight_utc():
    now = datetime(2026, 5, 10, 15, 30, tzinfo=UTC)
    assert window_start(7, now=now) == datetime(2026, 5, 3, tzinfo=UTC)
    assert window_start(None, now=now) is None


def test_report_queries_do_not_grow_with_data(bank, django_assert_max_num_queries):
    live_bank(bank, 3)
    with django_assert_max_num_queries(6):
        report = bank_impact(bank=bank)
    with django_assert_max_num_queries(2):  # the tallies' aggregate and the items' titles
        item_outcomes(bank=bank, report=report)
    live_bank(bank, 4)  # twice the data, and a second batch of items
    with django_assert_max_num_queries(6):
        report = bank_impact(bank=bank)
    with django_assert_max_num_queries(2):
        assert item_outcomes(bank=bank, report=report)
