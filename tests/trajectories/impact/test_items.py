"""trajectories.impact.items: per-item served-vs-withheld outcomes."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import make_arm, make_items, with_holdout
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
