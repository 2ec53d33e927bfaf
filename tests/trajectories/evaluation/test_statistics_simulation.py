"""bench/eval_statistics.py, smaller and seeded: the paired comparison rarely calls equal arms
different, even where tries of one task are correlated, and a naive test that counts every try as
independent is fooled on the very same simulated runs (so this simulation would catch an
anti-conservative test); and it finds a real lift often."""

from __future__ import annotations

from bench import eval_statistics


def test_equal_arms_are_rarely_called_better_where_a_naive_test_is_fooled():
    # 20 tasks × 10 tries, each arm moving a task's probability by up to ±35 points on every try.
    found = eval_statistics.scenario(400, seed=3, tasks=20, tries=10, deviation=0.35)
    assert found["better"][0] <= 0.05
    assert found["any"][0] <= 0.05 + 2 * found["any"][1]  # "better" or "worse": the two-sided size
    # The pooled z-test on all tries, as if they were independent, on the same runs.
    assert found["naive_better"][0] > 0.05 + 2 * found["naive_better"][1]
    assert found["naive_any"][0] > 0.10


def test_equal_arms_with_identical_tasks_are_rarely_called_better_at_50_tasks_by_3_tries():
    found = eval_statistics.scenario(300, seed=4, tasks=50, tries=3)
    assert found["better"][0] <= 0.05 and found["any"][0] <= 0.05 + 2 * found["any"][1]


def test_a_ten_point_lift_is_often_found_and_never_called_worse():
    found = eval_statistics.scenario(150, seed=5, tasks=50, tries=3, lift=0.10)
    assert found["better"][0] >= 0.25 and found["worse"][0] == 0.0
    # A 30-point lift on the same design is found almost always.
    assert eval_statistics.scenario(60, seed=6, tasks=50, tries=3, lift=0.30)["better"][0] >= 0.95
