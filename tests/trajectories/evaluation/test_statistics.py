"""The evaluation statistics against values worked out by hand: pass^k, pass@k, the run-to-run
spread, the per-arm costs, the exact sign-flip test (and its Monte Carlo fallback), the paired
bootstrap, the verdict rule and the flipped tasks. Pure functions: no database."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from trajectories.evaluation import statistics
from trajectories.evaluation.statistics import (
    Try,
    arm_summary,
    bootstrap_interval,
    flipped_tasks,
    paired_comparison,
    pass_at_k,
    pass_hat_k,
    run_to_run_sd,
    sign_flip_p,
    task_counts,
    verdict_of,
)

# Three tasks of three tries: 2 of 3, 3 of 3, 0 of 3 succeeded.
COUNTS = [(3, 2), (3, 3), (3, 0)]


def test_pass_hat_k_is_the_mean_chance_that_k_tries_all_succeed():
    assert pass_hat_k(COUNTS, 1) == pytest.approx((2 / 3 + 1 + 0) / 3)
    # C(2,2)/C(3,2) = 1/3 for the first task.
    assert pass_hat_k(COUNTS, 2) == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert pass_hat_k(COUNTS, 3) == pytest.approx(1 / 3)


def test_pass_at_k_is_the_mean_chance_that_one_of_k_tries_succeeds():
    assert pass_at_k(COUNTS, 1) == pytest.approx(5 / 9)
    # 1 − C(1,2)/C(3,2) = 1 for the first task, 1 − C(3,2)/C(3,2) = 0 for the last.
    assert pass_at_k(COUNTS, 2) == pytest.approx(2 / 3)
    assert pass_at_k(COUNTS, 3) == pytest.approx(2 / 3)


def test_tasks_with_fewer_known_tries_than_k_are_left_out_of_pass_k():
    counts = [(3, 3), (2, 1)]
    assert pass_hat_k(counts, 3) == 1.0  # only the first task has 3 known tries
    assert pass_hat_k(counts, 2) == pytest.approx((1 + 0) / 2)
    assert pass_hat_k([(2, 1)], 3) is None and pass_at_k([], 1) is None


def test_run_to_run_sd_is_the_spread_of_the_success_rate_of_each_try_number():
    tries = [
        Try("a", 1, True),
        Try("b", 1, False),  # try 1: 1/2
        Try("a", 2, True),
        Try("b", 2, True),  # try 2: 1
        Try("a", 3, False),
        Try("b", 3, False),  # try 3: 0
        Try("c", 3, None),  # not known: left out
    ]
    assert run_to_run_sd(tries) == pytest.approx(0.5)  # sqrt((0 + 0.25 + 0.25) / 2)
    assert run_to_run_sd([Try("a", 1, True), Try("b", 1, False)]) is None


def test_arm_summary_counts_tokens_cost_and_success_per_thousand_tokens():
    tries = [
        Try("a", 1, True, steps=4, prompt_tokens=100, completion_tokens=20, memory_tokens=30, cost=0.5),
        Try("a", 2, False, steps=6, prompt_tokens=200, completion_tokens=40, memory_tokens=30, cost=1.5),
        Try("b", 1, True, steps=None, memory_tokens=60),  # no usage reported
        Try("b", 2, None, steps=2, memory_tokens=0),  # not judged yet
    ]
    summary = arm_summary(tries, 2)
    assert (summary["tries"], summary["known"], summary["successes"]) == (4, 3, 2)
    assert summary["success_rate"] == pytest.approx(2 / 3)
    assert summary["mean_steps"] == pytest.approx(4)
    assert (summary["prompt_tokens"], summary["completion_tokens"]) == (150, 30)
    assert summary["tokens_per_try"] == pytest.approx(180)
    assert summary["memory_tokens"] == pytest.approx(30)
    assert summary["cost_per_try"] == pytest.approx(1.0)
    # 1 success in the 360 tokens of the judged tries that reported usage.
    assert summary["success_per_1k_tokens"] == pytest.approx(1000 / 360)
    # Task a: 1 of 2, task b: 1 of 1 known.
    assert summary["pass_hat_k"] == {"1": pytest.approx(0.75), "2": pytest.approx(0.0)}
    assert summary["pass_at_k"] == {"1": pytest.approx(0.75), "2": pytest.approx(1.0)}
    # Try 1: 2 of 2; try 2: 0 of 1 known. SD of (1, 0) with n − 1 = 1.
    assert summary["run_to_run_sd"] == pytest.approx(math.sqrt(0.5))


def test_an_arm_without_usage_or_prices_has_no_token_figures():
    summary = arm_summary([Try("a", 1, True), Try("a", 2, False)], 2)
    assert summary["tokens_per_try"] is None and summary["cost_per_try"] is None
    assert summary["success_per_1k_tokens"] is None and summary["memory_tokens"] == 0.0
    assert arm_summary([], 1)["success_rate"] is None


def _brute_force_p(differences):
    nonzero = [abs(d) for d in differences if d]
    observed = abs(sum(differences))
    patterns = list(itertools.product((1, -1), repeat=len(nonzero)))
    return sum(abs(sum(s * d for s, d in zip(signs, nonzero))) >= observed for signs in patterns) / len(patterns)


@pytest.mark.parametrize(
    ("differences", "expected"),
    [
        ([1, 1, 1, 1, 1], 2 / 32),  # five tasks all one way: still above 5 %
        ([1, 1, 1, 1, 1, 1], 2 / 64),
        ([Fraction(1, 3), Fraction(2, 3), 1], 2 / 8),
        ([2, 1, 1], 2 / 8),
        ([1, 1, -1], 1.0),
        ([0, 1, 1], 2 / 4),  # a task with no difference adds no sign pattern
        ([0, 0], 1.0),
    ],
)
def test_the_exact_sign_flip_test_matches_the_hand_count(differences, expected):
    p_value, exact = sign_flip_p([Fraction(d) for d in differences])
    assert exact and p_value == pytest.approx(expected)


def test_the_exact_sign_flip_test_matches_enumerating_every_sign_pattern():
    differences = [Fraction(n, d) for n, d in [(1, 3), (-2, 3), (1, 1), (1, 3), (0, 1), (2, 3), (1, 2), (-1, 2)]]
    assert sign_flip_p(differences) == (pytest.approx(_brute_force_p(differences)), True)


def test_a_wide_grid_falls_back_to_a_seeded_monte_carlo_near_the_exact_value(monkeypatch):
    differences = [Fraction(n, 3) for n in (1, 2, 3, -1, 2, 1, 3, -2, 1, 2)]
    exact, was_exact = sign_flip_p(differences)
    monkeypatch.setattr(statistics, "EXACT_WORK_MAX", 1)
    estimate, estimated_exactly = sign_flip_p(differences)
    assert was_exact and not estimated_exactly
    # 20,000 draws: the Monte Carlo error is about 0.003 here.
    assert estimate == pytest.approx(exact, abs=0.01)
    assert sign_flip_p(differences) == (estimate, False)  # seeded: the same value every time


def test_the_paired_bootstrap_interval_is_seeded_and_brackets_the_mean():
    assert bootstrap_interval([0.5] * 8) == (0.5, 0.5)
    assert bootstrap_interval([0.0, 1.0]) == (0.0, 1.0)  # resampled means are 0, 0.5 or 1
    values = [0.0, 1 / 3, -1 / 3, 1.0, 2 / 3, 0.0, 1 / 3, 0.0, -2 / 3, 1 / 3]
    low, high = bootstrap_interval(values)
    assert low < sum(values) / len(values) < high
    assert bootstrap_interval(values) == (low, high)
    assert bootstrap_interval([]) is None


def test_the_verdict_needs_the_test_and_the_interval_to_agree_and_enough_tasks():
    assert verdict_of(tasks=9, difference=0.5, p_value=0.001, interval=(0.3, 0.7)) == "not_enough"
    assert verdict_of(tasks=10, difference=0.5, p_value=0.001, interval=(0.3, 0.7)) == "better"
    assert verdict_of(tasks=10, difference=-0.5, p_value=0.001, interval=(-0.7, -0.3)) == "worse"
    assert verdict_of(tasks=10, difference=0.5, p_value=0.04, interval=(-0.01, 0.7)) == "no_difference"
    assert verdict_of(tasks=10, difference=0.5, p_value=0.06, interval=(0.1, 0.7)) == "no_difference"


def test_flipped_tasks_failed_every_try_in_one_arm_and_succeeded_in_the_other():
    candidate = {"a": (3, 1), "b": (3, 0), "c": (3, 3), "d": (3, 0), "e": (2, 2)}
    production = {"a": (3, 0), "b": (3, 2), "c": (3, 1), "d": (3, 0)}
    assert flipped_tasks(candidate, production) == {"better": ["a"], "worse": ["b"]}


def test_a_candidate_that_solves_every_task_production_fails_is_better():
    candidate = {f"t{i}": (3, 3) for i in range(12)}
    production = {f"t{i}": (3, 0) for i in range(12)}
    found = paired_comparison(candidate, production)
    assert found["difference"] == 1.0 and found["interval"] == [1.0, 1.0]
    assert found["p_value"] == pytest.approx(2 / 2**12) and found["verdict"] == "better"
    assert found["flipped"] == {"better": list(candidate), "worse": []}
    assert found["tasks"] == 12 and "exact sign-flip" in found["method"]
    reverse = paired_comparison(production, candidate)
    assert reverse["verdict"] == "worse" and reverse["flipped"]["worse"] == list(candidate)


def test_only_tasks_known_in_both_arms_are_paired():
    candidate = {f"t{i}": (3, 3) for i in range(12)}
    production = {f"t{i}": (1, 0) for i in range(9)}  # three tasks not judged yet in production
    found = paired_comparison(candidate, production)
    assert found["tasks"] == 9 and found["verdict"] == "not_enough"
    assert task_counts([Try("a", 1, None), Try("b", 1, True), Try("b", 2, False)]) == {"b": (2, 1)}
