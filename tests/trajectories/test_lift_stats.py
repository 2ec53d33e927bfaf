"""trajectories.lift_stats against values computed independently here, and
the simulation harness (trajectories.lift_simulation) in fast, seeded form:
what the Impact page promises about coverage, false verdicts under
continuous monitoring, false per-item flags and power."""

from __future__ import annotations

import math

import pytest

from trajectories import lift_simulation, lift_stats
from trajectories.lift_stats import ArmSums


def binary_arm(successes: int, failures: int, retrievals: int | None = None) -> ArmSums:
    n = successes + failures
    return ArmSums(
        retrievals=retrievals or n,
        triggered=retrievals or n,
        units=n,
        y_sum=successes,
        y_sq_sum=successes,
        trajectories=n,
        judged=n,
        successes=successes,
    )


def test_mixture_halfwidth_is_the_msprt_interval():
    # Johari et al. (2017): θ̂ ± sqrt(V(V+τ²)/τ² · (2 log(1/α) − log(V/(V+τ²)))), written out.
    v, tau2 = 0.002, 0.01
    by_hand = math.sqrt(v * (v + tau2) / tau2 * (2 * math.log(20) - math.log(v / (v + tau2))))
    assert lift_stats.mixture_halfwidth(v) == pytest.approx(by_hand, rel=1e-12)
    # Wider than the one-look normal interval at every variance, and shrinking with more data.
    for v in (1e-2, 1e-3, 1e-4, 1e-5):
        assert lift_stats.mixture_halfwidth(v) > 1.96 * math.sqrt(v)
    assert lift_stats.mixture_halfwidth(1e-4) < lift_stats.mixture_halfwidth(1e-3)


def test_always_valid_p_is_below_alpha_exactly_outside_the_interval():
    v = 0.001
    half = lift_stats.mixture_halfwidth(v)
    assert lift_stats.always_valid_p(half * 1.01, v) < 0.05 < lift_stats.always_valid_p(half * 0.99, v)
    assert lift_stats.always_valid_p(0.0, v) == 1.0


def test_srm_p_value_is_the_chi_square_test():
    # 100 of 300 held out against 50%: chi² = (100−150)²/150 · 2 = 33.3, p = erfc(sqrt(33.3/2)).
    assert lift_stats.srm_p_value(100, 300, 0.5) == pytest.approx(math.erfc(math.sqrt(100 / 3 / 2)))
    assert lift_stats.srm_p_value(150, 300, 0.5) == pytest.approx(1.0)
    assert lift_stats.srm_p_value(0, 0, 0.5) is None and lift_stats.srm_p_value(5, 10, 0.0) is None


def test_benjamini_hochberg_matches_the_textbook_example():
    # Benjamini & Hochberg (1995), section 4: 15 p-values, q = 0.05, the first 4 are rejected.
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719, 0.6528,
         0.7590, 1.0]  # fmt: skip
    assert lift_stats.benjamini_hochberg(p, q=0.05) == [True] * 4 + [False] * 11
    assert lift_stats.benjamini_hochberg([None, 0.001, None], q=0.05) == [False, True, False]


def test_design_effect_of_grouped_outcomes():
    # One trajectory per retrieval: design effect 1, the Newcombe interval of the counts.
    assert binary_arm(30, 30).design_effect == 1.0
    # Groups averaging independent tries have smaller variance, but never below units/judged.
    grouped = ArmSums(retrievals=10, triggered=10, units=10, y_sum=5, y_sq_sum=10 * 0.25, judged=40, successes=20)
    assert grouped.design_effect == pytest.approx(0.25) and grouped.effective_n == pytest.approx(40)


def test_assess_decides_and_plans():
    found = lift_stats.assess(binary_arm(70, 30), binary_arm(30, 70), 0.5)
    assert found.decision == "helps" and found.cs_low > 0 and found.fixed_low > found.cs_low
    assert not found.failed_guardrails
    few = lift_stats.assess(binary_arm(20, 9), binary_arm(5, 24), 0.5)
    assert few.decision == "not_enough_data" and few.cs_low > 0
    even = lift_stats.assess(binary_arm(250, 250), binary_arm(250, 250), 0.5)
    assert even.decision == "no_difference"
    # More data lowers the detectable effect; a 5-point lift needs more than a 10-point one.
    assert even.mde < lift_stats.assess(binary_arm(50, 50), binary_arm(50, 50), 0.5).mde
    assert even.more_needed[5] > even.more_needed[10] > 0
    assert lift_stats.minimum_detectable_effect(even.mde**2) > 0


# --- the simulation harness, fast and seeded (the README table runs it with 2,000 banks) -------------


def test_simulated_fixed_interval_coverage_is_near_95_and_the_sequence_covers_at_every_look():
    found = lift_simulation.coverage(300, seed=11)
    assert 0.92 <= found["fixed_coverage"] <= 0.98
    assert found["always_valid_coverage"] >= 0.95


def test_simulated_peeking_keeps_false_verdicts_under_5_percent():
    found = lift_simulation.peeking(150, seed=12, judged=1000)
    assert found["false_verdict_rate"] <= 0.05
    # The old rule (one-look interval, stop at the first verdict) is fooled far more often.
    assert found["fixed_rule_false_verdict_rate"] >= 0.10


def test_simulated_neutral_items_are_rarely_flagged():
    assert lift_simulation.item_flags(150, seed=13)["false_item_flag_rate"] <= 0.10


def test_simulated_power_and_biased_reporting():
    found = lift_simulation.power(60, seed=14)
    assert found["bank_power_at_0.5"] >= 0.25 and found["item_power"] > 0.05
    reporting = lift_simulation.reporting(60, seed=15)
    assert reporting["biased_helps_rate"] <= 0.10 and reporting["withheld_rate"] >= 0.6


def test_simulated_per_item_randomisation_flags_few_neutral_items_and_finds_a_harmful_one():
    found = lift_simulation.item_randomised(120, seed=16, judged=1000, item_fractions=(0.5,))
    assert found["randomised_false_item_flag_rate_at_0.5"] <= 0.10
    # With more data (5,000 judged trajectories) a −25-point item is found in most banks.
    more = lift_simulation.item_randomised(40, seed=17, judged=5000, item_fractions=(0.5,))
    assert more["randomised_item_power_at_0.5"] >= 0.5 and more["randomised_false_item_flag_rate_at_0.5"] <= 0.15
