"""trajectories.impact.statistics against values computed independently here
(and published ones)."""

from __future__ import annotations

import math
import random

import pytest

from trajectories.impact.statistics import (
    MIN_ITEM_UNITS,
    always_valid_p,
    benjamini_hochberg,
    item_effects,
    mixture_halfwidth,
    newcombe_difference,
    srm_p_value,
    two_proportion_p,
    wilson_interval,
)

Z95 = 1.959963984540054  # the 97.5% normal quantile, written out


def wilson_by_hand(x: int, n: int) -> tuple[float, float]:
    # Written from the textbook form (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n),
    # independently of statistics.wilson_interval.
    p, z2 = x / n, Z95**2
    root = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n**2))
    return (p + z2 / (2 * n) - root) / (1 + z2 / n), (p + z2 / (2 * n) + root) / (1 + z2 / n)


# --- statistics ---------------------------------------------------------------------------------


def test_wilson_interval_of_18_of_30():
    low, high = wilson_interval(18, 30)
    expected = wilson_by_hand(18, 30)
    assert low == pytest.approx(expected[0], abs=1e-12) and high == pytest.approx(expected[1], abs=1e-12)
    assert (round(low, 4), round(high, 4)) == (0.4232, 0.7541)  # published value for 18/30


def test_wilson_interval_edges():
    assert wilson_interval(0, 0) is None
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(wilson_by_hand(0, 10)[1]) and round(high, 4) == 0.2775
    low, high = wilson_interval(10, 10)
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
    d, low, high = newcombe_difference(x1, n1, x2, n2)
    p1, p2 = x1 / n1, x2 / n2
    (l1, u1), (l2, u2) = wilson_by_hand(x1, n1), wilson_by_hand(x2, n2)
    assert d == pytest.approx(p1 - p2)
    assert low == pytest.approx(p1 - p2 - math.hypot(p1 - l1, u2 - p2), abs=1e-12)
    assert high == pytest.approx(p1 - p2 + math.hypot(u1 - p1, p2 - l2), abs=1e-12)
    assert (round(low, 4), round(high, 4)) == published


def test_newcombe_difference_needs_both_arms():
    assert newcombe_difference(3, 10, 0, 0) is None
    assert newcombe_difference(0, 0, 3, 10) is None


def test_mixture_halfwidth_is_the_msprt_interval():
    # Johari et al. (2017): θ̂ ± sqrt(V(V+τ²)/τ² · (2 log(1/α) − log(V/(V+τ²)))), written out.
    v, tau2 = 0.002, 0.01
    by_hand = math.sqrt(v * (v + tau2) / tau2 * (2 * math.log(20) - math.log(v / (v + tau2))))
    assert mixture_halfwidth(v) == pytest.approx(by_hand, rel=1e-12)
    # Wider than the one-look normal interval at every variance, and shrinking with more data.
    for v in (1e-2, 1e-3, 1e-4, 1e-5):
        assert mixture_halfwidth(v) > 1.96 * math.sqrt(v)
    assert mixture_halfwidth(1e-4) < mixture_halfwidth(1e-3)


def test_always_valid_p_is_below_alpha_exactly_outside_the_interval():
    v = 0.001
    half = mixture_halfwidth(v)
    assert always_valid_p(half * 1.01, v) < 0.05 < always_valid_p(half * 0.99, v)
    assert always_valid_p(0.0, v) == 1.0


def test_srm_p_value_is_the_chi_square_test():
    # 100 of 300 held out against 50%: chi² = (100−150)²/150 · 2 = 33.3, p = erfc(sqrt(33.3/2)).
    assert srm_p_value(100, 300, 0.5) == pytest.approx(math.erfc(math.sqrt(100 / 3 / 2)))
    assert srm_p_value(150, 300, 0.5) == pytest.approx(1.0)
    assert srm_p_value(0, 0, 0.5) is None and srm_p_value(5, 10, 0.0) is None


def test_benjamini_hochberg_matches_the_textbook_example():
    # Benjamini & Hochberg (1995), section 4: 15 p-values, q = 0.05, the first 4 are rejected.
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719, 0.6528,
         0.7590, 1.0]  # fmt: skip
    assert benjamini_hochberg(p, q=0.05) == [True] * 4 + [False] * 11
    assert benjamini_hochberg([None, 0.001, None], q=0.05) == [False, True, False]


def item_effects_one_by_one(rows: list[tuple[int, float, int, float]]) -> list[tuple]:
    """The per-item figures, one item at a time, from the scalar tests above
    (Newcombe, the score test, Benjamini–Hochberg) and the shrinkage's formula."""
    found = []
    for served, served_y, withheld, withheld_y in rows:
        difference = low = high = p = None
        if served and withheld:
            difference, low, high = newcombe_difference(served_y, served, withheld_y, withheld)
            if served >= MIN_ITEM_UNITS and withheld >= MIN_ITEM_UNITS:
                p = two_proportion_p(served_y, served, withheld_y, withheld)
        found.append([difference, low, high, p, None, False])
    for row, rejected in zip(found, benjamini_hochberg([row[3] for row in found])):
        row[5] = rejected
    spread = []
    for (served, served_y, withheld, withheld_y), row in zip(rows, found):
        if row[0] is not None:
            p1, p2 = (served_y + 1) / (served + 2), (withheld_y + 1) / (withheld + 2)
            spread.append((row, p1 * (1 - p1) / served + p2 * (1 - p2) / withheld))
    if spread:
        tau2 = max(0.0, sum(row[0] ** 2 - se2 for row, se2 in spread) / len(spread))
        for row, se2 in spread:
            row[4] = row[0] * tau2 / (tau2 + se2)
    return [tuple(row) for row in found]


def test_item_effects_computed_together_equal_the_one_by_one_figures():
    rng = random.Random(7)
    rows = [(0, 0.0, 0, 0.0), (12, 0.0, 15, 0.0), (12, 12.0, 15, 15.0), (3, 1.0, 0, 0.0), (40, 38.0, 40, 4.0)]
    for _ in range(3000):
        served, withheld = rng.choice([0, 1, 9, 10, 60]) + rng.randint(0, 5), rng.choice([0, 1, 10, 60])
        rows.append((served, rng.choice([0.0, served, rng.random() * served]), withheld, rng.random() * withheld))
    expected = item_effects_one_by_one(rows)
    got = [(e.difference, e.low, e.high, e.p_value, e.shrunk, e.significant) for e in item_effects(rows)]
    assert got == expected  # the same operations: equal to the last bit
    assert sum(row[5] for row in expected) > 10 and any(row[3] == 1.0 for row in expected)
