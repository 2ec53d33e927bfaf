"""trajectories.impact.items: per-item served-vs-withheld outcomes."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.serving.item_totals import item_totals_rebuild
from memories.serving.models import RetrievalTally
from tests.factories import make_arm, make_items, with_holdout
from tests.trajectories.impact.test_statistics import item_effects_one_by_one
from trajectories.impact.items import item_outcomes
from trajectories.impact.report import bank_impact
from trajectories.impact.statistics import newcombe_difference

# --- per item ----------------------------------------------------------------------------------------


def test_item_outcomes_compare_served_and_withheld(bank):
    with_holdout(bank)
    a, b, c = make_items(bank, 3)
    make_arm(bank, "treatment", successes=6, failures=2, items=[a, b])
    make_arm(bank, "treatment", successes=1, failures=1, items=[b])
    make_arm(bank, "holdout", successes=1, failures=3, unjudged=2, items=[a, c])
    make_arm(bank, "treatment", unjudged=9, items=[c])  # unjudged: never counted
    rows = {o.public_id: o for o in item_outcomes(bank=bank)}
    assert (rows[a.public_id].served_judged, rows[a.public_id].served_successes) == (8, 6)
    assert (rows[a.public_id].withheld_judged, rows[a.public_id].withheld_successes) == (4, 1)
    assert (rows[b.public_id].served_judged, rows[b.public_id].served_successes) == (10, 7)
    assert rows[b.public_id].withheld_judged == 0 and rows[b.public_id].withheld_rate is None
    assert (
        rows[c.public_id].served_judged,
        rows[c.public_id].withheld_judged,
        rows[c.public_id].withheld_successes,
    ) == (0, 4, 1)
    ordered = [o.public_id for o in item_outcomes(bank=bank)]
    assert ordered == [b.public_id, a.public_id, c.public_id]  # by judged served, most first
    assert rows[a.public_id].title == "Item 0" and rows[a.public_id].status == "approved"


def test_item_flag_needs_significance_after_benjamini_hochberg(bank):
    # Not every item with 10 judged trajectories below the holdout rate is flagged: an item is compared
    # with the retrievals that would have served it, and flagged only when BH says so.
    with_holdout(bank)
    weak, strong, slightly, few = make_items(bank, 4)
    make_arm(bank, "holdout", successes=18, failures=12, items=[weak, strong, slightly, few])  # 60% withheld
    make_arm(bank, "treatment", successes=2, failures=28, items=[weak])  # 7% served: far below
    make_arm(bank, "treatment", successes=29, failures=1, items=[strong])  # 97%: far above
    make_arm(bank, "treatment", successes=15, failures=15, items=[slightly])  # 50%: below, not significant
    make_arm(bank, "treatment", successes=0, failures=9, items=[few])  # 0% but 9 judged: not tested
    rows = {o.public_id: o for o in item_outcomes(bank=bank)}
    assert rows[weak.public_id].may_hurt and not rows[weak.public_id].may_help
    assert rows[strong.public_id].may_help and not rows[strong.public_id].may_hurt
    assert not rows[slightly.public_id].may_hurt and rows[slightly.public_id].p_value > 0.05
    assert rows[few.public_id].p_value is None and not rows[few.public_id].may_hurt
    weak_row = rows[weak.public_id]
    assert weak_row.difference == pytest.approx(2 / 30 - 18 / 30)
    assert (weak_row.low, weak_row.high) == pytest.approx(newcombe_difference(2, 30, 18, 30)[1:])
    assert weak_row.high < 0
    # Shrinkage pulls the estimates towards zero for ranking, never past it.
    assert weak_row.difference < weak_row.shrunk < 0


def test_items_of_hard_tasks_are_not_flagged_against_the_global_holdout(bank):
    # An item served on hard tasks (20% either way) next to an easy-task item (80% either way):
    # compared with the 50% global holdout instead, the harmless hard-task item would look harmful.
    with_holdout(bank)
    hard, easy = make_items(bank, 2)
    make_arm(bank, "treatment", successes=6, failures=24, items=[hard])
    make_arm(bank, "holdout", successes=6, failures=24, items=[hard])
    make_arm(bank, "treatment", successes=24, failures=6, items=[easy])
    make_arm(bank, "holdout", successes=24, failures=6, items=[easy])
    rows = {o.public_id: o for o in item_outcomes(bank=bank)}
    assert rows[hard.public_id].served_rate == pytest.approx(0.2)
    assert rows[hard.public_id].difference == pytest.approx(0) and not rows[hard.public_id].may_hurt
    assert not rows[easy.public_id].may_hurt


def test_item_outcomes_ignore_other_banks_and_odd_results(bank, other_bank):
    ours = make_items(bank, 1)[0]
    theirs = make_items(other_bank, 1)[0]
    make_arm(other_bank, "treatment", successes=5, items=[ours, theirs])
    listed_twice = [{"id": str(ours.public_id), "score": 0.9}, {"id": str(ours.public_id), "score": 0.8}]
    make_arm(bank, "treatment", successes=2, results=listed_twice)
    odd = [{"id": "not-a-uuid"}, "just a string", 7, {"score": 0.5}, {"id": str(uuid.uuid4())}]
    make_arm(bank, "treatment", failures=1, results=odd)
    make_arm(bank, "treatment", failures=1, results={"not": "a list"})
    rows = item_outcomes(bank=bank)
    by_id = {o.public_id: o for o in rows}
    assert by_id[ours.public_id].served_judged == 2  # once per retrieval, theirs not counted
    assert theirs.public_id not in by_id
    deleted = [o for o in rows if o.item is None]
    assert len(deleted) == 1 and deleted[0].title == "(deleted item)" and deleted[0].served_count == 0


def test_item_outcomes_window_and_limit(bank):
    items = make_items(bank, 5)
    for n, item in enumerate(items):
        make_arm(bank, "treatment", successes=n + 1, items=[item], days_ago=40 if n == 4 else None)
    since = timezone.now() - timedelta(days=30)
    rows = item_outcomes(bank=bank, since=since, limit=3)
    assert [o.public_id for o in rows] == [items[3].public_id, items[2].public_id, items[1].public_id]


def test_item_outcomes_query_count(bank, django_assert_max_num_queries):
    items = make_items(bank, 3)
    make_arm(bank, "treatment", successes=3, items=items)
    report = bank_impact(bank=bank)
    with django_assert_max_num_queries(2):  # the aggregate and the items' titles
        assert len(item_outcomes(bank=bank, report=report)) == 3


def test_item_outcomes_limit_shows_the_first_rows_of_the_whole_table(bank):
    """A limit only cuts the table: the shown rows, their order, their tests
    (corrected across every item, shown or not) are the unlimited table's first rows."""
    with_holdout(bank)
    items = make_items(bank, 5)
    for n, item in enumerate(items):
        make_arm(bank, "treatment", successes=2 + n, failures=3, items=[item])
        make_arm(bank, "holdout", successes=1, failures=2 + n % 2, items=[item])
    whole = item_outcomes(bank=bank, limit=50)
    assert len(whole) == 5
    for limit in (0, 2, 5):
        assert item_outcomes(bank=bank, limit=limit) == whole[:limit]


def seed_item_tallies(bank, sides: list[str]) -> None:
    """Per-item tally rows over 40 days and 300 items (some signed rows
    cancelling a side to 0 or below): Σy in quarters, so it is exact in any order."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.3)")
        cursor.execute(
            """
            INSERT INTO memories_retrievaltally (bank_id, day, arm, item, side, retrievals, triggered, units,
                y_sum, y_sq_sum, trajectories, judged, successes, steps, usage_runs, usage_successes,
                prompt_tokens, completion_tokens, memory_blocks, memory_tokens, compacted, monthly)
            SELECT %(bank)s, current_date - d, 'treatment', md5(%(bank)s || '-' || i)::uuid, side, 0, 0, units,
                   units * (CASE WHEN i %% 9 = 0 AND side LIKE 'served%%' THEN 4 ELSE q END) / 4.0, 0,
                   units, units + 1, units * q / 4, 0, 0, 0, 0, 0, 0, 0, true, false
            FROM (
                SELECT d, i, side, CASE WHEN random() < 0.03 THEN -4 WHEN i > 290 AND d > 1 THEN 0
                                        ELSE floor(random() * 4)::int END AS units,
                       floor(random() * 5)::int AS q
                FROM generate_series(0, 39) d, generate_series(1, 300) i, unnest(%(sides)s::text[]) side
            ) r
            """,
            {"bank": bank.pk, "sides": sides},
        )
    item_totals_rebuild(bank_id=bank.pk)  # rows written compacted: the all-time totals hold them, as compaction keeps


@pytest.mark.parametrize(
    "sides, comparison",
    [(["served", "holdout"], "holdout_arm"), (["served", "served_r", "withheld_r"], "randomised")],
)
def test_item_outcomes_equal_the_one_by_one_figures_on_a_seeded_bank(bank, sides, comparison):
    seed_item_tallies(bank, sides)
    report = bank_impact(bank=bank)
    got = item_outcomes(bank=bank, limit=10_000, report=report)
    assert report.item_comparison == comparison
    by_side = {}  # every row, summed per item and side here
    for item, side, units, y, judged, successes in RetrievalTally.objects.filter(
        bank=bank, item__isnull=False
    ).values_list("item", "side", "units", "y_sum", "judged", "successes"):
        total = by_side.setdefault((item, side), [0, 0.0, 0, 0])
        for i, value in enumerate((units, y, judged, successes)):
            total[i] += value
    served_sides, withheld_sides = (
        (["served_r"], ["withheld_r"]) if comparison == "randomised" else (["served", "served_r"], ["holdout"])
    )
    pairs = {}
    for (item, side), total in by_side.items():
        if total[0] > 0 and side in served_sides + withheld_sides:
            pair = pairs.setdefault(item, [[0, 0.0, 0, 0], [0, 0.0, 0, 0]])
            pair[side in withheld_sides] = [a + b for a, b in zip(pair[side in withheld_sides], total)]
    items = sorted(pairs, key=lambda item: (-pairs[item][0][2], -pairs[item][1][2], str(item)))
    effects = item_effects_one_by_one([(*pairs[i][0][:2], *pairs[i][1][:2]) for i in items])
    expected = [
        (item, *pairs[item][0], *pairs[item][1], *effect[:4], effect[5] and effect[0] < 0, effect[5] and effect[0] > 0)
        for item, effect in zip(items, effects)
    ]
    fields = "public_id served_units served_y served_judged served_successes withheld_units withheld_y"
    fields += " withheld_judged withheld_successes difference low high p_value may_hurt may_help"
    figures = [tuple(getattr(o, field) for field in fields.split()) for o in got]
    assert figures == expected and len(expected) > 250
    shrunk = [(o.shrunk, e[4]) for o, e in zip(got, effects) if e[4] is not None or o.shrunk is not None]
    assert [a for a, _ in shrunk] == pytest.approx([b for _, b in shrunk], rel=1e-9)  # τ² summed in another order
    assert sum(o.may_help for o in got) > 5 and any(o.p_value is None for o in got)
