"""trajectories.lift: the statistics against values computed independently
here (and published ones), the verdict thresholds, what is and is not
counted, per-item served-vs-withheld outcomes, and GET /api/v1/impact."""

from __future__ import annotations

import math
import uuid
from datetime import timedelta
from unittest.mock import ANY

import pytest
from django.utils import timezone

from memories.models import RetrievalEvent
from tests import factories
from tests.factories import make_arm, make_items, with_holdout
from trajectories import lift, lift_stats
from trajectories.models import Trajectory
from trajectories.recording.judgments import retrieval_outcomes_rebuild

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
    retrieval_outcomes_rebuild(bank=bank)
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
    # The reporting share is now of retrievals that came back *judged* (3 of 12), the unit compared.
    assert t.units == 3 and t.report_rate == pytest.approx(3 / 12)


def test_window_filters_by_the_retrievals_time(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=5, days_ago=40)
    make_arm(bank, "treatment", successes=1, failures=2, days_ago=3)
    since = timezone.now() - timedelta(days=30)
    assert lift.bank_lift(bank=bank, since=since).treatment.judged == 3
    assert lift.bank_lift(bank=bank).treatment.judged == 8
    until = timezone.now() - timedelta(days=10)
    assert lift.bank_lift(bank=bank, until=until).treatment.judged == 5


def test_bank_lift_is_four_queries(bank, django_assert_num_queries):
    # The period (latest retrieval with a holdout, the last change before it), the arms' aggregate,
    # and the window's retrievals outside the period.
    with_holdout(bank)
    make_arm(bank, "treatment", successes=40, failures=20, fraction=0.5)
    make_arm(bank, "holdout", successes=20, failures=40, fraction=0.5)
    with django_assert_num_queries(4):
        assert lift.bank_lift(bank=bank).verdict == "helps"


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


def test_item_flag_needs_significance_after_benjamini_hochberg(bank):
    # The old rule flagged any item with 10 judged trajectories below the holdout rate; now an item is
    # compared with the retrievals that would have served it, and flagged only when BH says so.
    with_holdout(bank)
    weak, strong, slightly, few = make_items(bank, 4)
    make_arm(bank, "holdout", successes=18, failures=12, items=[weak, strong, slightly, few])  # 60% withheld
    make_arm(bank, "treatment", successes=2, failures=28, items=[weak])  # 7% served: far below
    make_arm(bank, "treatment", successes=29, failures=1, items=[strong])  # 97%: far above
    make_arm(bank, "treatment", successes=15, failures=15, items=[slightly])  # 50%: below, not significant
    make_arm(bank, "treatment", successes=0, failures=9, items=[few])  # 0% but 9 judged: not tested
    rows = {o.public_id: o for o in lift.item_outcomes(bank=bank)}
    assert rows[weak.public_id].may_hurt and not rows[weak.public_id].may_help
    assert rows[strong.public_id].may_help and not rows[strong.public_id].may_hurt
    assert not rows[slightly.public_id].may_hurt and rows[slightly.public_id].p_value > 0.05
    assert rows[few.public_id].p_value is None and not rows[few.public_id].may_hurt
    weak_row = rows[weak.public_id]
    assert weak_row.difference == pytest.approx(2 / 30 - 18 / 30)
    assert (weak_row.low, weak_row.high) == pytest.approx(lift.newcombe_difference(2, 30, 18, 30)[1:])
    assert weak_row.high < 0
    # Shrinkage pulls the estimates towards zero for ranking, never past it.
    assert weak_row.difference < weak_row.shrunk < 0


def test_items_of_hard_tasks_are_not_flagged_against_the_global_holdout(bank):
    # An item served on hard tasks (20% either way) next to an easy-task item (80% either way):
    # the old rule compared 20% with the 50% global holdout and flagged a harmless item.
    with_holdout(bank)
    hard, easy = make_items(bank, 2)
    make_arm(bank, "treatment", successes=6, failures=24, items=[hard])
    make_arm(bank, "holdout", successes=6, failures=24, items=[hard])
    make_arm(bank, "treatment", successes=24, failures=6, items=[easy])
    make_arm(bank, "holdout", successes=24, failures=6, items=[easy])
    rows = {o.public_id: o for o in lift.item_outcomes(bank=bank)}
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
            "served_retrievals": 60,
            "served_success_rate": pytest.approx(0.7),
            "withheld_judged": 60,
            "withheld_successes": 18,
            "withheld_retrievals": 60,
            "withheld_success_rate": pytest.approx(0.3),
            "difference": pytest.approx(0.4),
            "ci_low": pytest.approx(lift.newcombe_difference(42, 60, 18, 60)[1]),
            "ci_high": pytest.approx(lift.newcombe_difference(42, 60, 18, 60)[2]),
            "p_value": pytest.approx(lift_stats.two_proportion_p(42, 60, 18, 60)),
            "shrunk": pytest.approx(0.4, abs=0.1),
            "served_count": 0,
            "may_hurt": False,
            "may_help": True,
        }
    ]
    assert body["difference"]["cs_low"] > 0 and body["difference"]["cs_low"] < body["difference"]["ci_low"]
    assert body["guardrails"] == [
        {"name": "sample_ratio", "ok": True, "p_value": None, "detail": ANY},
        {"name": "reporting", "ok": True, "p_value": pytest.approx(1.0), "detail": ANY},
    ]
    assert body["period"] == {"fraction": None, "after": None, "excluded": 0}
    power = body["power"]
    assert 0.3 < power["mde"] < 0.4  # 60 retrievals per arm detect only a lift of about 36 points
    assert power["more_needed_5"] > power["more_needed_10"] > 1000
    assert body["treatment"]["units"] == 60 and body["treatment"]["report_rate"] == 1.0


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


# --- what the comparison counts (issue 11) ------------------------------------------------------------


def test_verdict_follows_the_always_valid_interval_not_the_one_look_interval(bank):
    # 58% vs 42% of 100 each: Newcombe's one-look interval excludes zero; the always-valid one does not.
    with_holdout(bank)
    make_arm(bank, "treatment", successes=58, failures=42)
    make_arm(bank, "holdout", successes=42, failures=58)
    d = lift.bank_lift(bank=bank).difference
    assert d.low > 0
    assert d.cs_low < 0 < d.cs_high and d.cs_low < d.low and d.cs_high > d.high
    report = lift.bank_lift(bank=bank)
    assert report.verdict == "no_difference" and "always-valid" in report.verdict_text


def test_several_trajectories_of_one_retrieval_are_one_outcome(bank):
    with_holdout(bank)
    events = make_arm(bank, "treatment", successes=30, failures=30)
    # A MaTTS group: four more successes on the first failing retrieval; the retrieval is still one unit.
    failing = events[30]
    Trajectory.objects.bulk_create(
        Trajectory(bank=bank, task="again", retrieval=failing, verdict="success", status="done") for _ in range(4)
    )
    retrieval_outcomes_rebuild(bank=bank)
    t = lift.bank_lift(bank=bank).treatment
    assert (t.units, t.judged, t.successes) == (60, 64, 34)
    assert t.rate == pytest.approx((30 + 4 / 5) / 60)  # not 34 / 64


def test_only_retrievals_that_served_or_would_have_served_an_item_are_compared(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=30, failures=30)
    make_arm(bank, "treatment", successes=0, failures=40, triggered=False)  # found nothing to serve
    t = lift.bank_lift(bank=bank).treatment
    assert (t.retrievals, t.triggered, t.units, t.judged) == (100, 60, 60, 60)
    assert t.rate == pytest.approx(0.5)


def test_only_the_latest_holdout_period_is_compared(bank):
    with_holdout(bank, 0.2)
    # Before: holdout 50%, the holdout arm did badly. Then the fraction changed to 20%.
    make_arm(bank, "treatment", successes=30, failures=30, fraction=0.5, days_ago=20)
    make_arm(bank, "holdout", successes=5, failures=55, fraction=0.5, days_ago=20)
    make_arm(bank, "treatment", successes=40, failures=40, fraction=0.2, days_ago=5)
    make_arm(bank, "holdout", successes=10, failures=10, fraction=0.2, days_ago=5)
    report = lift.bank_lift(bank=bank)
    assert report.period.fraction == 0.2 and report.period.after is not None and report.period.excluded == 120
    assert (report.treatment.units, report.holdout.units) == (80, 20)
    assert report.verdict == "not_enough_data"  # the old holdout's 60 do not count
    # Turning the holdout off keeps comparing the last period that had one, never new treatment with old holdout.
    make_arm(bank, "treatment", successes=50, fraction=0.0)
    with_holdout(bank, 0.0)
    report = lift.bank_lift(bank=bank)
    assert report.period.fraction == 0.2 and (report.treatment.units, report.holdout.units) == (80, 20)
    assert report.period.excluded == 170


def test_sample_ratio_mismatch_withholds_the_verdict(bank):
    with_holdout(bank, 0.5)
    make_arm(bank, "treatment", successes=150, failures=50, fraction=0.5)
    make_arm(bank, "holdout", successes=30, failures=70, fraction=0.5)  # 100 of 300 held out, not ~150
    report = lift.bank_lift(bank=bank)
    ratio = next(g for g in report.guardrails if g.name == "sample_ratio")
    assert not ratio.ok and ratio.p_value < 0.001 and "33.3% of 300 retrievals were held out" in ratio.detail
    assert report.difference.cs_low > 0  # the data alone would say "helps"
    assert report.verdict == "withheld" and "do not match the holdout fraction" in report.verdict_text


def test_differential_reporting_withholds_the_verdict(bank):
    with_holdout(bank, 0.5)
    # Served agents hide their failures: 100 retrievals each, but 40 treatment ones never come back.
    make_arm(bank, "treatment", successes=50, failures=10, unreported=40, fraction=0.5)
    make_arm(bank, "holdout", successes=50, failures=50, fraction=0.5)
    report = lift.bank_lift(bank=bank)
    reporting = next(g for g in report.guardrails if g.name == "reporting")
    assert not reporting.ok and "60.0% of treatment retrievals and 100.0% of holdout" in reporting.detail
    assert report.verdict == "withheld" and "report back at different rates" in report.verdict_text


def test_balanced_arms_pass_the_guardrails_and_report_steps(bank):
    with_holdout(bank, 0.5)
    make_arm(bank, "treatment", successes=70, failures=30, fraction=0.5)
    make_arm(bank, "holdout", successes=30, failures=70, fraction=0.5)
    Trajectory.objects.filter(retrieval__arm="treatment").update(step_count=4)
    Trajectory.objects.filter(retrieval__arm="holdout").update(step_count=7)
    retrieval_outcomes_rebuild(bank=bank)
    report = lift.bank_lift(bank=bank)
    assert all(g.ok for g in report.guardrails) and report.verdict == "helps"
    assert report.treatment.mean_steps == 4 and report.holdout.mean_steps == 7 and report.steps_difference == -3
