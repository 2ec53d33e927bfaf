"""trajectories.impact.report: the verdict thresholds, what is and is not
counted, the window, and the queries of the bank report."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.serving.models import RetrievalEvent
from tests.factories import make_arm, with_holdout
from tests.trajectories.impact.test_statistics import wilson_by_hand
from trajectories.impact.report import FALLBACK_BASELINE, bank_impact
from trajectories.judging.verdicts import retrieval_outcomes_rebuild
from trajectories.models import Trajectory

# --- the bank report -----------------------------------------------------------------------------


def test_clear_lift_says_helps(bank):
    with_holdout(bank, 0.5)
    make_arm(bank, "treatment", successes=42, failures=18)
    make_arm(bank, "holdout", successes=18, failures=42)
    report = bank_impact(bank=bank)
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
    report = bank_impact(bank=bank)
    assert report.difference.high < 0
    assert report.verdict == "hurts" and "less often" in report.verdict_text


def test_equal_rates_say_no_measurable_difference(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=31, failures=29)
    make_arm(bank, "holdout", successes=30, failures=30)
    report = bank_impact(bank=bank)
    assert report.difference.low < 0 < report.difference.high
    assert report.verdict == "no_difference" and "includes zero" in report.verdict_text


def test_29_judged_is_not_enough_and_30_is(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=30, failures=0)
    make_arm(bank, "holdout", successes=0, failures=29)
    report = bank_impact(bank=bank)
    # The interval is far above zero, yet one arm has 29 judged trajectories.
    assert report.difference.low > 0
    assert report.verdict == "not_enough_data"
    assert report.treatment.needed == 0 and report.holdout.needed == 1
    assert "holdout arm (memories withheld) needs 1 more" in report.verdict_text
    assert "treatment arm" not in report.verdict_text

    make_arm(bank, "holdout", failures=1)
    assert bank_impact(bank=bank).verdict == "helps"


def test_not_enough_data_names_what_each_arm_needs(bank):
    with_holdout(bank, 0.1)
    make_arm(bank, "treatment", successes=5, failures=3)
    report = bank_impact(bank=bank)
    assert report.verdict == "not_enough_data"
    assert report.difference is None  # the holdout has nothing judged
    assert "needs 22 more" in report.verdict_text and "needs 30 more" in report.verdict_text


def test_without_a_holdout_the_report_is_treatment_only(bank):
    assert bank.holdout_fraction == 0
    make_arm(bank, "treatment", successes=40, failures=10)
    report = bank_impact(bank=bank)
    assert report.verdict == "no_holdout" and not report.holdout_configured
    assert report.difference is None
    assert "No holdout is configured" in report.verdict_text and "holdout fraction" in report.verdict_text
    assert (report.treatment.judged, report.treatment.successes) == (50, 40)
    assert report.baseline == FALLBACK_BASELINE


def test_past_holdout_retrievals_still_compare_after_the_holdout_is_turned_off(bank):
    make_arm(bank, "treatment", successes=40, failures=20)
    make_arm(bank, "holdout", successes=20, failures=40)
    report = bank_impact(bank=bank)
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
    report = bank_impact(bank=bank)
    assert (report.treatment.retrievals, report.treatment.reported, report.treatment.judged) == (4, 4, 4)
    assert report.treatment.successes == 3
    assert (report.holdout.retrievals, report.holdout.judged) == (0, 0)


def test_trajectories_without_retrieval_unjudged_and_unreported_are_left_out(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=2, failures=1, unjudged=4, unreported=5)
    Trajectory.objects.bulk_create(Trajectory(bank=bank, task="no retrieval", verdict="success") for _ in range(20))
    t = bank_impact(bank=bank).treatment
    assert (t.retrievals, t.reported, t.judged, t.successes) == (12, 7, 3, 2)
    # The reporting share is now of retrievals that came back *judged* (3 of 12), the unit compared.
    assert t.units == 3 and t.report_rate == pytest.approx(3 / 12)


def test_window_filters_by_the_retrievals_time(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=5, days_ago=40)
    make_arm(bank, "treatment", successes=1, failures=2, days_ago=3)
    since = timezone.now() - timedelta(days=30)
    assert bank_impact(bank=bank, since=since).treatment.judged == 3
    assert bank_impact(bank=bank).treatment.judged == 8
    until = timezone.now() - timedelta(days=10)
    assert bank_impact(bank=bank, until=until).treatment.judged == 5


def test_bank_impact_takes_at_most_four_queries(bank, django_assert_max_num_queries):
    # The period (latest retrieval with a holdout, the last change before it), the arms' aggregate,
    # and the window's retrievals outside the period.
    with_holdout(bank)
    make_arm(bank, "treatment", successes=40, failures=20, fraction=0.5)
    make_arm(bank, "holdout", successes=20, failures=40, fraction=0.5)
    with django_assert_max_num_queries(4):
        assert bank_impact(bank=bank).verdict == "helps"


# --- what the comparison counts ------------------------------------------------------------------------


def test_verdict_follows_the_always_valid_interval_not_the_one_look_interval(bank):
    # 58% vs 42% of 100 each: Newcombe's one-look interval excludes zero; the always-valid one does not.
    with_holdout(bank)
    make_arm(bank, "treatment", successes=58, failures=42)
    make_arm(bank, "holdout", successes=42, failures=58)
    d = bank_impact(bank=bank).difference
    assert d.low > 0
    assert d.cs_low < 0 < d.cs_high and d.cs_low < d.low and d.cs_high > d.high
    report = bank_impact(bank=bank)
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
    t = bank_impact(bank=bank).treatment
    assert (t.units, t.judged, t.successes) == (60, 64, 34)
    assert t.rate == pytest.approx((30 + 4 / 5) / 60)  # not 34 / 64


def test_only_retrievals_that_served_or_would_have_served_an_item_are_compared(bank):
    with_holdout(bank)
    make_arm(bank, "treatment", successes=30, failures=30)
    make_arm(bank, "treatment", successes=0, failures=40, triggered=False)  # found nothing to serve
    t = bank_impact(bank=bank).treatment
    assert (t.retrievals, t.triggered, t.units, t.judged) == (100, 60, 60, 60)
    assert t.rate == pytest.approx(0.5)


def test_only_the_latest_holdout_period_is_compared(bank):
    with_holdout(bank, 0.2)
    # Before: holdout 50%, the holdout arm did badly. Then the fraction changed to 20%.
    make_arm(bank, "treatment", successes=30, failures=30, fraction=0.5, days_ago=20)
    make_arm(bank, "holdout", successes=5, failures=55, fraction=0.5, days_ago=20)
    make_arm(bank, "treatment", successes=40, failures=40, fraction=0.2, days_ago=5)
    make_arm(bank, "holdout", successes=10, failures=10, fraction=0.2, days_ago=5)
    report = bank_impact(bank=bank)
    assert report.period.fraction == 0.2 and report.period.after is not None and report.period.excluded == 120
    assert (report.treatment.units, report.holdout.units) == (80, 20)
    assert report.verdict == "not_enough_data"  # the old holdout's 60 do not count
    # Turning the holdout off keeps comparing the last period that had one, never new treatment with old holdout.
    make_arm(bank, "treatment", successes=50, fraction=0.0)
    with_holdout(bank, 0.0)
    report = bank_impact(bank=bank)
    assert report.period.fraction == 0.2 and (report.treatment.units, report.holdout.units) == (80, 20)
    assert report.period.excluded == 170


def test_sample_ratio_mismatch_withholds_the_verdict(bank):
    with_holdout(bank, 0.5)
    make_arm(bank, "treatment", successes=150, failures=50, fraction=0.5)
    make_arm(bank, "holdout", successes=30, failures=70, fraction=0.5)  # 100 of 300 held out, not ~150
    report = bank_impact(bank=bank)
    ratio = next(g for g in report.guardrails if g.name == "sample_ratio")
    assert not ratio.ok and ratio.p_value < 0.001 and "33.3% of 300 retrievals were held out" in ratio.detail
    assert report.difference.cs_low > 0  # the data alone would say "helps"
    assert report.verdict == "withheld" and "do not match the holdout fraction" in report.verdict_text


def test_differential_reporting_withholds_the_verdict(bank):
    with_holdout(bank, 0.5)
    # Served agents hide their failures: 100 retrievals each, but 40 treatment ones never come back.
    make_arm(bank, "treatment", successes=50, failures=10, unreported=40, fraction=0.5)
    make_arm(bank, "holdout", successes=50, failures=50, fraction=0.5)
    report = bank_impact(bank=bank)
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
    report = bank_impact(bank=bank)
    assert all(g.ok for g in report.guardrails) and report.verdict == "helps"
    assert report.treatment.mean_steps == 4 and report.holdout.mean_steps == 7 and report.steps_difference == -3
