"""The statistics behind the Impact report, as plain functions of counts
(no Django, no database): the report feeds them the bank's sums and
bench/impact_simulation.py feeds them simulated banks, so the numbers the
docs quote come from this very code. Arms are summed in ``arms``; the
verdict, guardrails and power are in ``verdicts``.

The unit is the retrieval. A retrieval's outcome ``y`` is the share of its
judged trajectories that succeeded (0 or 1 when one trajectory came back, a
fraction for MaTTS groups and retries), so correlated trajectories of one task
never count as independent evidence. An arm is summed as ``ArmSums``.

- Fixed-horizon interval (secondary, one look): Newcombe's hybrid score
  interval (Newcombe 1998, method 10) from two Wilson intervals, each on the
  arm's *effective* sample size n / deff, where deff = s² / (p(1 − p)) is the
  design effect of clustered outcomes (Kish 1965; Wilson-with-effective-n as in
  Korn & Graubard 1998). With one trajectory per retrieval deff = 1: exactly
  the textbook Newcombe interval.
- Always-valid interval (primary, the verdict follows it): the normal-mixture
  confidence sequence for a difference of means — Robbins' (1970) mixture
  martingale, as used for A/B tests by the mixture SPRT of Johari, Koomen,
  Pekelis & Walsh (2017, "Peeking at A/B tests"; Operations Research 2022) and
  in Howard, Ramdas, McAuliffe & Sekhon (2021, Ann. Stat., eq. 14). It holds
  simultaneously at every look with probability ≥ 95% (asymptotically, with a
  plug-in variance; Waudby-Smith et al. 2024), so watching the page daily and
  acting on the first "helps" is safe.
- Guardrails: sample-ratio mismatch (chi-square goodness of fit of the arms'
  retrieval counts against the configured holdout fraction; Fabijan et al.
  2019, KDD) and differential reporting (two-proportion test of the share of
  retrievals that came back judged). Either withholds the verdict.
- Power: the smallest effect the always-valid rule detects with 80%
  probability at the current sample, and how many more judged trajectories a
  5- or 10-point lift needs.
- Per item: served vs withheld among retrievals that would have served the
  item, a score test per item, Benjamini–Hochberg (1995) across items, and an
  empirical-Bayes shrunken estimate for ranking.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

ALPHA = 0.05
Z = NormalDist().inv_cdf(1 - ALPHA / 2)  # 1.959963984540054
MIXTURE_SD = 0.10
"""τ of the normal mixture: the confidence sequence is tightest for effects of about ±10 points."""
MIN_UNITS = 30
"""Judged retrievals each arm needs before any verdict (the normal approximation needs some data)."""
GUARDRAIL_P = 0.001
"""A guardrail fires below this p-value (the usual sample-ratio-mismatch threshold)."""
POWER = 0.80
ITEM_FDR = 0.10
"""Benjamini–Hochberg false-discovery rate across items."""
MIN_ITEM_UNITS = 10
"""Judged retrievals an item needs on each side (served, withheld) before it is tested."""


def normal_two_sided_p(z: float) -> float:
    """Two-sided p-value of a standard normal statistic."""
    return math.erfc(abs(z) / math.sqrt(2))


def wilson_interval(successes: float, n: float, z: float = Z) -> tuple[float, float] | None:
    """The Wilson score interval for ``successes`` of ``n`` (Wilson 1927);
    None when n is 0. Accepts an effective (non-integer) n."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n)))
    # Exact at the edges (0/n starts at 0, n/n ends at 1); float rounding would leave ±1e-17.
    low = 0.0 if successes <= 0 else max(0.0, center - half)
    high = 1.0 if successes >= n else min(1.0, center + half)
    return low, high


def newcombe_difference(x1: float, n1: float, x2: float, n2: float, z: float = Z) -> tuple[float, float, float] | None:
    """(p1 − p2, low, high): Newcombe's hybrid score interval for the
    difference of two independent proportions (Newcombe 1998, method 10);
    None when either n is 0."""
    first, second = wilson_interval(x1, n1, z), wilson_interval(x2, n2, z)
    if first is None or second is None:
        return None
    p1, p2 = x1 / n1, x2 / n2
    (l1, u1), (l2, u2) = first, second
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, max(-1.0, low), min(1.0, high)


def mixture_halfwidth(variance: float, tau: float = MIXTURE_SD, alpha: float = ALPHA) -> float:
    """Half-width of the normal-mixture confidence sequence for an estimate
    with variance ``variance`` (Johari et al. 2017, the mSPRT's confidence
    interval; Robbins 1970):

        sqrt( V (V + τ²) / τ² · (2 log(1/α) + log((V + τ²) / V)) ).

    The mixture martingale sqrt(V/(V+τ²))·exp(τ² d² / (2V(V+τ²))) stays below
    1/α at every sample size with probability ≥ 1 − α (Ville's inequality), so
    the interval covers the true difference at every look at once."""
    if variance <= 0:
        return 0.0
    v, t2 = variance, tau * tau
    return math.sqrt(v * (v + t2) / t2 * (2 * math.log(1 / alpha) + math.log((v + t2) / v)))


def always_valid_p(estimate: float, variance: float, tau: float = MIXTURE_SD) -> float:
    """The mixture SPRT's always-valid p-value for "no difference" at this
    look (1 / the mixture likelihood ratio, capped at 1; Johari et al. 2017).
    Take the running minimum over looks for a p-value valid under peeking."""
    if variance <= 0:
        return 1.0
    v, t2 = variance, tau * tau
    log_ratio = 0.5 * math.log(v / (v + t2)) + t2 * estimate * estimate / (2 * v * (v + t2))
    return 1.0 if log_ratio <= 0 else math.exp(-log_ratio)


def srm_p_value(holdout: int, total: int, fraction: float) -> float | None:
    """Sample-ratio-mismatch test: p-value of the chi-square goodness-of-fit
    test (1 degree of freedom) of ``holdout`` holdout retrievals out of
    ``total`` against the configured ``fraction``; None when it cannot be
    computed (no retrievals, or a fraction of 0 or 1)."""
    if total <= 0 or not 0 < fraction < 1:
        return None
    expected_h, expected_t = total * fraction, total * (1 - fraction)
    chi2 = (holdout - expected_h) ** 2 / expected_h + ((total - holdout) - expected_t) ** 2 / expected_t
    return math.erfc(math.sqrt(chi2 / 2))


def two_proportion_p(x1: float, n1: float, x2: float, n2: float) -> float | None:
    """Two-sided p-value of the pooled two-proportion z (score) test; None
    when an arm is empty or the pooled rate is 0 or 1."""
    if n1 <= 0 or n2 <= 0:
        return None
    pooled = (x1 + x2) / (n1 + n2)
    if pooled <= 0 or pooled >= 1:
        return 1.0 if x1 / n1 == x2 / n2 else None
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    return normal_two_sided_p((x1 / n1 - x2 / n2) / se)


def benjamini_hochberg(p_values: list[float | None], q: float = ITEM_FDR) -> list[bool]:
    """Which hypotheses the Benjamini–Hochberg (1995) step-up procedure
    rejects at false-discovery rate ``q``; None p-values are untested (never
    rejected, not counted in m)."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m, cutoff = len(tested), -1
    for rank, (p, _) in enumerate(tested, start=1):
        if p <= q * rank / m:
            cutoff = rank
    rejected = [False] * len(p_values)
    for _, i in tested[:cutoff] if cutoff > 0 else []:
        rejected[i] = True
    return rejected


# --- per item -------------------------------------------------------------------------------------


@dataclass
class ItemEffect:
    difference: float | None = None  # served − withheld, per retrieval
    low: float | None = None  # Newcombe 95% (per item, not corrected for many items)
    high: float | None = None
    p_value: float | None = None
    shrunk: float | None = None  # empirical-Bayes estimate, for ranking
    significant: bool = False  # Benjamini–Hochberg at ITEM_FDR


@dataclass
class ItemEffectArrays:
    """``item_effects`` as arrays, one entry per item; NaN where ItemEffect has None."""

    difference: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p_value: np.ndarray
    shrunk: np.ndarray
    significant: np.ndarray


def _square(x: np.ndarray) -> np.ndarray:
    """x ** 2 as Python computes it (C's pow; x * x can differ in the last bit)."""
    return np.float_power(x, 2.0)


def _wilson_arrays(successes: np.ndarray, n: np.ndarray, z: float = Z) -> tuple[np.ndarray, np.ndarray]:
    """``wilson_interval`` of each (successes, n), n > 0: the same operations, element by element."""
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * np.sqrt(np.maximum(0.0, p * (1 - p) / n + z * z / (4 * n * n)))
    low = np.where(successes <= 0, 0.0, np.maximum(0.0, center - half))
    high = np.where(successes >= n, 1.0, np.minimum(1.0, center + half))
    return low, high


def item_effect_arrays(served, served_y, withheld, withheld_y, q: float = ITEM_FDR) -> ItemEffectArrays:
    """``item_effects`` over arrays of (served units, served Σy, withheld
    units, withheld Σy): the same figures, computed with numpy in a few
    passes instead of one Python call per item (a bank of 100k items)."""
    n1, x1 = np.asarray(served, dtype=float), np.asarray(served_y, dtype=float)
    n2, x2 = np.asarray(withheld, dtype=float), np.asarray(withheld_y, dtype=float)
    size = len(n1)
    difference, low, high, p_value, shrunk = (np.full(size, np.nan) for _ in range(5))
    both = np.flatnonzero((n1 != 0) & (n2 != 0))
    a, sa, b, sb = n1[both], x1[both], n2[both], x2[both]
    pa, pb = sa / a, sb / b
    (la, ua), (lb, ub) = _wilson_arrays(sa, a), _wilson_arrays(sb, b)
    d = pa - pb
    difference[both] = d
    low[both] = np.maximum(-1.0, d - np.sqrt(_square(pa - la) + _square(ub - pb)))
    high[both] = np.minimum(1.0, d + np.sqrt(_square(ua - pa) + _square(pb - lb)))
    # The score test (two_proportion_p), items with MIN_ITEM_UNITS on each side.
    tested = both[(a >= MIN_ITEM_UNITS) & (b >= MIN_ITEM_UNITS)]
    a, sa, b, sb = n1[tested], x1[tested], n2[tested], x2[tested]
    pooled = (sa + sb) / (a + b)
    edge = (pooled <= 0) | (pooled >= 1)
    inner = ~edge
    se = np.sqrt(pooled[inner] * (1 - pooled[inner]) * (1 / a[inner] + 1 / b[inner]))
    z = np.abs((sa[inner] / a[inner] - sb[inner] / b[inner]) / se) / math.sqrt(2)
    p_value[tested[inner]] = [math.erfc(value) for value in z.tolist()]
    p_value[tested[edge & (sa / a == sb / b)]] = 1.0
    # Benjamini–Hochberg: the largest rank whose p-value is under q·rank/m rejects it and all below.
    significant = np.zeros(size, dtype=bool)
    candidates = np.flatnonzero(~np.isnan(p_value))
    order = candidates[np.lexsort((candidates, p_value[candidates]))]
    m = len(order)
    under = np.flatnonzero(p_value[order] <= q * np.arange(1, m + 1, dtype=float) / m)
    if len(under):
        significant[order[: under[-1] + 1]] = True
    # Shrinkage towards 0 by τ²/(τ² + se²), τ² by the method of moments across the items with a difference.
    if len(both):
        a, sa, b, sb = n1[both], x1[both], n2[both], x2[both]
        p1, p2 = (sa + 1) / (a + 2), (sb + 1) / (b + 2)
        se2 = p1 * (1 - p1) / a + p2 * (1 - p2) / b
        d = difference[both]
        tau2 = max(0.0, sum((_square(d) - se2).tolist()) / len(both))  # summed in order, as the per-item code did
        shrunk[both] = d * tau2 / (tau2 + se2)
    return ItemEffectArrays(difference, low, high, p_value, shrunk, significant)


def item_effects(rows: list[tuple[int, float, int, float]], q: float = ITEM_FDR) -> list[ItemEffect]:
    """Per item, from (served units, served Σy, withheld units, withheld Σy):
    the served − withheld difference with Newcombe's interval, the score
    test's p-value (items with MIN_ITEM_UNITS on each side only),
    Benjamini–Hochberg across the tested items, and an estimate shrunk
    towards 0 by τ²/(τ² + se²), τ² by the method of moments across items
    (James–Stein style), for ranking. (``item_effect_arrays``, as objects.)"""
    columns = list(zip(*rows)) if rows else [(), (), (), ()]
    found = item_effect_arrays(*columns, q=q)
    return [
        ItemEffect(*(None if math.isnan(v) else v for v in values[:5]), significant=bool(values[5]))
        for values in zip(
            found.difference.tolist(),
            found.low.tolist(),
            found.high.tolist(),
            found.p_value.tolist(),
            found.shrunk.tolist(),
            found.significant.tolist(),
        )
    ]
