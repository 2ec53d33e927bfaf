"""bench/impact_simulation.py in fast, seeded form: what the Impact page
promises about coverage, false verdicts under continuous monitoring, false
per-item flags and power (the docs' table runs it with 2,000 banks)."""

from __future__ import annotations

from bench import impact_simulation


def test_simulated_fixed_interval_coverage_is_near_95_and_the_sequence_covers_at_every_look():
    found = impact_simulation.coverage(300, seed=11)
    assert 0.92 <= found["fixed_coverage"] <= 0.98
    assert found["always_valid_coverage"] >= 0.95


def test_simulated_peeking_keeps_false_verdicts_under_5_percent():
    found = impact_simulation.peeking(150, seed=12, judged=1000)
    assert found["false_verdict_rate"] <= 0.05
    # A naive rule (one-look interval, stop at the first verdict) is fooled far more often.
    assert found["fixed_rule_false_verdict_rate"] >= 0.10


def test_simulated_neutral_items_are_rarely_flagged():
    assert impact_simulation.item_flags(150, seed=13)["false_item_flag_rate"] <= 0.10


def test_simulated_power_and_biased_reporting():
    found = impact_simulation.power(60, seed=14)
    assert found["bank_power_at_0.5"] >= 0.25 and found["item_power"] > 0.05
    reporting = impact_simulation.reporting(60, seed=15)
    assert reporting["biased_helps_rate"] <= 0.10 and reporting["withheld_rate"] >= 0.6


def test_simulated_per_item_randomisation_flags_few_neutral_items_and_finds_a_harmful_one():
    found = impact_simulation.item_randomised(120, seed=16, judged=1000, item_fractions=(0.5,))
    assert found["randomised_false_item_flag_rate_at_0.5"] <= 0.10
    # With more data (5,000 judged trajectories) a −25-point item is found in most banks.
    more = impact_simulation.item_randomised(40, seed=17, judged=5000, item_fractions=(0.5,))
    assert more["randomised_item_power_at_0.5"] >= 0.5 and more["randomised_false_item_flag_rate_at_0.5"] <= 0.15
