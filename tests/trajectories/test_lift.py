"""trajectories.lift: the statistics against values computed independently
here (and published ones), the verdict thresholds, what is and is not
counted, per-item served-vs-withheld outcomes, and GET /api/v1/impact."""

from __future__ import annotations

import math
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import RetrievalEvent
from tests import factories
from tests.factories import make_arm, make_items, with_holdout
from trajectories import lift
from trajectories.models import Trajectory

Z95 = 1.959963984540054  # the 97.5% normal quantile, written out


def wilson_by_hand(x: int, n: int) -> tuple[float, float]:
    # Written from the textbook form (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n),
    # independently of lift.wilson_interval.
    p, z2 = x / n, Z95**2
    root = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n**2))
    return (p + z2 / (2 * n) - root) / (1 + z2 / n), (p + z2 / (2 * n) + root) / (1 + z2 / n)


# --- statistics ---------------------------------------------------------------------------------


def test_wilson_interval_of_18_of_30():
    low, high = lift.wilson_interval(18, 30)
    expected = wilson_by_hand(18, 30)
    assert low == pytest.approx(expected[0], abs=1e-12) and high == pytest.approx(expected[1], abs=1e-12)
    assert (round(low, 4), round(high, 4)) == (0.4232, 0.7541)  # published value for 18/30


def test_wilson_interval_edges():
    assert lift.wilson_interval(0, 0) is None
    low, high = lift.wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(wilson_by_hand(0, 10)[1]) and round(high, 4) == 0.2775
    low, high = lift.wilson_interval(10, 10)
    assert high == 1.0 and round(low, 4) == 0.7225


@pytest.mark.parametrize(
    "x1,n1,x2,n2,published",
    [
        (56, 70, 48, 80, (0.0524, 0.3339)),  # Newcombe (1998), Stat Med 17:873, table II, method 10
        (9, 10, 3, 10, (0.1705, 0.8090)),
        (5, 56, 0, 29, (-0.0381, 0.1926)),
    ],
)
def test_newcombe_difference_matches_published_and_hand_values(x1, n1, x2, n2, published):
    d, low, high = lift.newcombe_difference(x1, n1, x2, n2)
    p1, p2 = x1 / n1, x2 / n2
    (l1, u1), (l2, u2) = wilson_by_hand(x1, n1), wilson_by_hand(x2, n2)
    assert d == pytest.approx(p1 - p2)
    assert low == pytest.approx(p1 - p2 - math.hypot(p1 - l1, u2 - p2), abs=1e-12)
    assert high == pytest.approx(p1 - p2 + math.hypot(u1 - p1, p2 - l2), abs=1e-12)
    assert (round(low, 4), round(high, 4)) == published


def test_newcombe_difference_needs_both_arms():
    assert lift.newcombe_difference(3, 10, 0, 0) is None
    assert lift.newcombe_difference(0, 0, 3, 10) is None


# --- the bank report -----------------------------------------------------------------------------


def test_clear_lift_says_helps(bank):
    with_holdout(bank, 0.5)
    make_arm(bank, "treatment", successes=42, failures=18)
    make_arm(bank, "holdout", successes=18, failures=42)
    report = lift.bank_lift(bank=bank)
    t, h = report.treatment, report.holdout
    assert (t.retrievals, t.reported, t.judged, t.successes) == (60, 60, 60, 42)
    assert (h.retrievals, h.reported, h.judged, h.successes) == (60, 60, 60, 18)
    assert t.rate == pytest.approx(0.7) and h.rate == pytest.approx(0.3)
    assert (t.low, t.high) == pytest.approx(wilson_by_hand(42, 60))
    d = report.difference
    assert d.estimate == pytest.approx(0.4)
    (l1, u1), (l2, u2) = wilson_by_hand(42, 60), wilson_by_hand(18, 60)
    assert d.low == pytest.approx(0.4 - math.hypot(0.7 - l1, u2 - 0.3))
    assert d.high == pytest.approx(0.4 + math.hypot(u1 - 0.7, 0.3 - l2))
    assert d.low > 0
    assert report.verdict == "helps" and report.verdict_text.startswith("The bank helps")
    assert "40.0 points" in report.verdict_text


def test_reverse_lift_says_hurts(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=18, failures=42)
    make_arm(bank, "holdout", successes=42, failures=18)
    report = lift.bank_lift(bank=bank)
    assert report.difference.high < 0
    assert report.verdict == "hurts" and "less often" in report.verdict_text


def test_equal_rates_say_no_measurable_difference(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=31, failures=29)
    make_arm(bank, "holdout", successes=30, failures=30)
    report = lift.bank_lift(bank=bank)
    assert report.difference.low < 0 < report.difference.high
    assert report.verdict == "no_difference" and "includes zero" in report.verdict_text


def test_29_judged_is_not_enough_and_30_is(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=30, failures=0)
    make_arm(bank, "holdout", successes=0, failures=29)
    report = lift.bank_lift(bank=bank)
    # The interval is far above zero, yet one arm has 29 judged trajectories.
    assert report.difference.low > 0
    assert report.verdict == "not_enough_data"
    assert report.treatment.needed == 0 and report.holdout.needed == 1
    assert "holdout arm (memories withheld) needs 1 more" in report.verdict_text
    assert "treatment arm" not in report.verdict_text

    make_arm(bank, "holdout", failures=1)
    assert lift.bank_lift(bank=bank).verdict == "helps"


def test_not_enough_data_names_what_each_arm_needs(bank):
    with_holdout(bank, 0.1)
    make_arm(bank, "treatment", successes=5, failures=3)
    report = lift.bank_lift(bank=bank)
    assert report.verdict == "not_enough_data"
    assert report.difference is None  # the holdout has nothing judged
    assert "needs 22 more" in report.verdict_text and "needs 30 more" in report.verdict_text


def test_without_a_holdout_the_report_is_treatment_only(bank):
    assert bank.holdout_fraction == 0
    make_arm(bank, "treatment", successes=40, failures=10)
    report = lift.bank_lift(bank=bank)
    assert report.verdict == "no_holdout" and not report.holdout_configured
    assert report.difference is None
    assert "No holdout is configured" in report.verdict_text and "holdout fraction" in report.verdict_text
    assert (report.treatment.judged, report.treatment.successes) == (50, 40)
    assert report.baseline == lift.FALLBACK_BASELINE


def test_past_holdout_retrievals_still_compare_after_the_holdout_is_turned_off(bank):
    make_arm(bank, "treatment", successes=40, failures=20)
    make_arm(bank, "holdout", successes=20, failures=40)
    report = lift.bank_lift(bank=bank)
    assert report.holdout_configured and report.verdict == "helps"


def test_other_banks_never_count(bank, other_bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=3, failures=1)
    make_arm(other_bank, "treatment", successes=50, failures=50)
    make_arm(other_bank, "holdout", successes=50, failures=50)
    # A trajectory of theirs pointing at a retrieval of ours (the API refuses
    # this; the report must not trust that) and one of ours at theirs.
    ours = RetrievalEvent.objects.filter(bank=bank).first()
    theirs = RetrievalEvent.objects.filter(bank=other_bank).first()
    Trajectory.objects.create(bank=other_bank, task="x", retrieval=ours, verdict="success")
    Trajectory.objects.create(bank=bank, task="y", retrieval=theirs, verdict="success")
    report = lift.bank_lift(bank=bank)
    assert (report.treatment.retrievals, report.treatment.reported, report.treatment.judged) == (4, 4, 4)
    assert report.treatment.successes == 3
    assert (report.holdout.retrievals, report.holdout.judged) == (0, 0)


def test_trajectories_without_retrieval_unjudged_and_unreported_are_left_out(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=2, failures=1, unjudged=4, unreported=5)
    Trajectory.objects.bulk_create(Trajectory(bank=bank, task="no retrieval", verdict="success") for _ in range(20))
    t = lift.bank_lift(bank=bank).treatment
    assert (t.retrievals, t.reported, t.judged, t.successes) == (12, 7, 3, 2)
    assert t.report_rate == pytest.approx(7 / 12)


def test_window_filters_by_the_retrievals_time(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=5, days_ago=40)
    make_arm(bank, "treatment", successes=1, failures=2, days_ago=3)
    since = timezone.now() - timedelta(days=30)
    assert lift.bank_lift(bank=bank, since=since).treatment.judged == 3
    assert lift.bank_lift(bank=bank).treatment.judged == 8
    until = timezone.now() - timedelta(days=10)
    assert lift.bank_lift(bank=bank, until=until).treatment.judged == 5


def test_bank_lift_is_two_aggregate_queries(bank, django_assert_num_queries):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=40, failures=20)
    make_arm(bank, "holdout", successes=20, failures=40)
    with django_assert_num_queries(2):
        lift.bank_lift(bank=bank)


# --- per item ----------------------------------------------------------------------------------------


def test_item_outcomes_compare_served_and_withheld(bank):
    with_holdout(bank)
    a, b, c = make_items(bank, 3)
    make_arm(bank, "treatment", successes=6, failures=2, items=[a, b])
    make_arm(bank, "treatment", successes=1, failures=1, items=[b])
    make_arm(bank, "holdout", successes=1, failures=3, unjudged=2, items=[a, c])
    make_arm(bank, "treatment", unjudged=9, items=[c])  # unjudged: never counted
    rows = {o.public_id: o for o in lift.item_outcomes(bank=bank)}
    assert (rows[a.public_id].served_judged, rows[a.public_id].served_successes) == (8, 6)
    assert (rows[a.public_id].withheld_judged, rows[a.public_id].withheld_successes) == (4, 1)
    assert (rows[b.public_id].served_judged, rows[b.public_id].served_successes) == (10, 7)
    assert rows[b.public_id].withheld_judged == 0 and rows[b.public_id].withheld_rate is None
    assert (
        rows[c.public_id].served_judged,
        rows[c.public_id].withheld_judged,
        rows[c.public_id].withheld_successes,
    ) == (0, 4, 1)
    ordered = [o.public_id for o in lift.item_outcomes(bank=bank)]
    assert ordered == [b.public_id, a.public_id, c.public_id]  # by judged served, most first
    assert rows[a.public_id].title == "Item 0" and rows[a.public_id].status == "approved"


def test_item_flagged_below_the_holdout_baseline(bank):
    with_holdout(bank)
    weak, strong, few = make_items(bank, 3)
    make_arm(bank, "holdout", successes=21, failures=9)  # baseline 70%
    make_arm(bank, "treatment", successes=6, failures=4, items=[weak])  # 60% of 10 < 70%
    make_arm(bank, "treatment", successes=8, failures=2, items=[strong])  # 80%
    make_arm(bank, "treatment", successes=0, failures=9, items=[few])  # 0% but only 9 judged
    report = lift.bank_lift(bank=bank)
    assert report.baseline_is_holdout and report.baseline == pytest.approx(0.7)
    flags = {o.public_id: o.may_hurt for o in lift.item_outcomes(bank=bank, lift=report)}
    assert flags == {weak.public_id: True, strong.public_id: False, few.public_id: False}


def test_item_flag_falls_back_to_50_percent_without_a_holdout(bank):
    below, above = make_items(bank, 2)
    make_arm(bank, "treatment", successes=4, failures=6, items=[below])  # 40%
    make_arm(bank, "treatment", successes=6, failures=4, items=[above])  # 60%
    flags = {o.public_id: o.may_hurt for o in lift.item_outcomes(bank=bank)}
    assert flags == {below.public_id: True, above.public_id: False}


def test_item_outcomes_ignore_other_banks_and_odd_results(bank, other_bank):
    ours = make_items(bank, 1)[0]
    theirs = make_items(other_bank, 1)[0]
    make_arm(other_bank, "treatment", successes=5, items=[ours, theirs])
    listed_twice = [{"id": str(ours.public_id), "score": 0.9}, {"id": str(ours.public_id), "score": 0.8}]
    make_arm(bank, "treatment", successes=2, results=listed_twice)
    odd = [{"id": "not-a-uuid"}, "just a string", 7, {"score": 0.5}, {"id": str(uuid.uuid4())}]
    make_arm(bank, "treatment", failures=1, results=odd)
    make_arm(bank, "treatment", failures=1, results={"not": "a list"})
    rows = lift.item_outcomes(bank=bank)
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
    rows = lift.item_outcomes(bank=bank, since=since, limit=3)
    assert [o.public_id for o in rows] == [items[3].public_id, items[2].public_id, items[1].public_id]


def test_item_outcomes_query_count(bank, django_assert_num_queries):
    items = make_items(bank, 3)
    make_arm(bank, "treatment", successes=3, items=items)
    report = lift.bank_lift(bank=bank)
    with django_assert_num_queries(2):  # the aggregate and the items' titles
        assert len(lift.item_outcomes(bank=bank, lift=report)) == 3


# --- GET /api/v1/impact -------------------------------------------------------------------------------


def test_api_reports_the_same_numbers(client, bank, other_bank):
    with_holdout(bank)
    item = make_items(bank, 1)[0]
    make_arm(bank, "treatment", successes=42, failures=18, items=[item])
    make_arm(bank, "holdout", successes=18, failures=42, items=[item])
    make_arm(other_bank, "holdout", successes=99)
    secret = factories.make_token(bank, scopes=("retrieve",))
    response = client.get("/api/v1/impact", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["verdict"] == "helps" and body["days"] is None and body["holdout_configured"] is True
    assert body["treatment"]["judged"] == 60 and body["treatment"]["successes"] == 42
    assert body["holdout"]["judged"] == 60 and body["holdout"]["successes"] == 18
    assert body["difference"]["estimate"] == pytest.approx(0.4)
    assert body["difference"]["ci_low"] == pytest.approx(lift.newcombe_difference(42, 60, 18, 60)[1])
    assert body["items"] == [
        {
            "id": str(item.public_id),
            "title": "Item 0",
            "status": "approved",
            "served_judged": 60,
            "served_successes": 42,
            "served_success_rate": pytest.approx(0.7),
            "withheld_judged": 60,
            "withheld_successes": 18,
            "withheld_success_rate": pytest.approx(0.3),
            "served_count": 0,
            "may_hurt": False,
        }
    ]


def test_api_days_window_and_validation(client, bank):
    make_arm(bank, "treatment", successes=4, days_ago=40)
    make_arm(bank, "treatment", successes=1)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank)}"}
    body = client.get("/api/v1/impact?days=30", **auth).json()
    assert body["days"] == 30 and body["treatment"]["judged"] == 1 and body["verdict"] == "no_holdout"
    assert body["difference"] is None
    for bad in ("0", "-3", "abc", "99999", "1.5"):
        response = client.get(f"/api/v1/impact?days={bad}", **auth)
        assert response.status_code == 422 and response.json()["code"] == "validation_error", bad


def test_api_needs_the_retrieve_scope(client, bank):
    ingest_only = factories.make_token(bank, scopes=("ingest",))
    response = client.get("/api/v1/impact", HTTP_AUTHORIZATION=f"Bearer {ingest_only}")
    assert response.status_code == 403 and response.json()["code"] == "missing_scope"
    response = client.get("/api/v1/impact")
    assert response.status_code == 401 and response.json()["code"] == "missing_token"
    response = client.get("/api/v1/impact", HTTP_AUTHORIZATION="Bearer rb_nonsense")
    assert response.status_code == 401
