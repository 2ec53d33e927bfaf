"""The statistics of an evaluation run, as plain functions of its tries (no Django, no database):
``verdicts`` feeds them a run's tries and bench/eval_statistics.py feeds them simulated runs, so
the numbers the docs quote come from this very code.

The unit of comparison is the task. Every arm tries the same tasks k times, so two arms are
compared task by task: a task's *share* in an arm is the fraction of its tries with a known outcome
that succeeded, and the paired difference is share(arm) − share(other). Tries of one task are never
counted as independent evidence (they share the task, and the memories the arm serves for it).

- Test: the sign-flip permutation test of the mean paired difference (Fisher 1935; Good 2005,
  "Permutation, Parametric and Bootstrap Tests", §3.3). If the arms are exchangeable within a task,
  every per-task difference is as likely to have either sign; the p-value is the share of the 2^n
  sign patterns whose |sum| is at least the observed one. It is computed exactly (the distribution of
  the sum, convolved task by task over a grid of the differences) unless that grid is too large,
  then by a seeded Monte Carlo of MONTE_CARLO_DRAWS patterns, p = (1 + hits) / (1 + draws), which is
  itself a valid p-value. Valid at any number of tasks; no normal approximation.
- Interval: the paired bootstrap (tasks resampled with replacement, their differences kept paired),
  percentile 95 % interval of the mean difference, BOOTSTRAP_DRAWS resamples, seeded: the same tries
  always give the same interval.
- Verdict: "better" / "worse" when the test rejects at ALPHA and the difference and the interval
  agree on the direction; "no_difference" otherwise; "not_enough" below MIN_TASKS tasks with a known
  outcome in both arms.
- pass^k (τ-bench, Yao et al. 2024): the chance that k tries of a task all succeed, estimated without
  bias per task by C(c, k) / C(n, k) (n known tries, c successes), averaged over tasks. pass@k
  (Chen et al. 2021): the chance that at least one of k succeeds, 1 − C(n − c, k) / C(n, k).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction

ALPHA = 0.05
MIN_TASKS = 10
"""Tasks with a known outcome in both arms before a comparison gets a verdict. Below 6 tasks the sign-flip
test cannot reject at 5 % at all (its smallest p-value is 2 / 2^n); at 10 it can, but only on a clear
majority of tasks moving one way."""
BOOTSTRAP_DRAWS = 2000
MONTE_CARLO_DRAWS = 20000
EXACT_WORK_MAX = 4_000_000
"""Most steps (tasks × width of the sum's grid) the exact test may take; beyond, it uses Monte Carlo."""
SEED = 20240601
"""The fixed seed of the bootstrap and the Monte Carlo test: a run's numbers never change on a refresh."""

BETTER, WORSE, NO_DIFFERENCE, NOT_ENOUGH = "better", "worse", "no_difference", "not_enough"


@dataclass(frozen=True)
class Try:
    """One recorded (or still pending) try of one arm: ``outcome`` None while it is not known."""

    task: str
    number: int
    outcome: bool | None
    steps: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    memory_tokens: int = 0
    cost: float | None = None  # USD, None when the model or its price is unknown


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def task_counts(tries: list[Try]) -> dict[str, tuple[int, int]]:
    """Per task: (tries with a known outcome, successes); tasks with no known try are left out."""
    counts: dict[str, tuple[int, int]] = {}
    for t in tries:
        if t.outcome is not None:
            known, successes = counts.get(t.task, (0, 0))
            counts[t.task] = (known + 1, successes + int(t.outcome))
    return counts


def pass_hat_k(counts: list[tuple[int, int]], k: int) -> float | None:
    """pass^k: the mean over tasks of C(c, k) / C(n, k), the unbiased estimate of the chance that k tries
    all succeed; tasks with fewer than k known tries are left out (None when none has k)."""
    per_task = [math.comb(c, k) / math.comb(n, k) for n, c in counts if n >= k]
    return _mean(per_task)


def pass_at_k(counts: list[tuple[int, int]], k: int) -> float | None:
    """pass@k: the mean over tasks of 1 − C(n − c, k) / C(n, k), the chance that at least one of k tries
    succeeds; tasks with fewer than k known tries are left out (None when none has k)."""
    per_task = [1 - math.comb(n - c, k) / math.comb(n, k) for n, c in counts if n >= k]
    return _mean(per_task)


def run_to_run_sd(tries: list[Try]) -> float | None:
    """The sample standard deviation, across the try numbers 1..k, of the arm's success rate computed on
    each try number alone: how much a one-try run of the task set would move from run to run. None
    with fewer than two try numbers that have a known outcome."""
    by_number: dict[int, list[bool]] = {}
    for t in tries:
        if t.outcome is not None:
            by_number.setdefault(t.number, []).append(t.outcome)
    rates = [sum(v) / len(v) for v in by_number.values()]
    if len(rates) < 2:
        return None
    mean = sum(rates) / len(rates)
    return math.sqrt(sum((r - mean) ** 2 for r in rates) / (len(rates) - 1))


def arm_summary(tries: list[Try], k: int) -> dict:
    """An arm's numbers (the contract's per-arm results, without "release"). ``tries`` counts the recorded
    tries given; per-try means are over the tries that reported the quantity (None when none did)."""
    known = [t for t in tries if t.outcome is not None]
    successes = sum(t.outcome for t in known)
    counts = list(task_counts(tries).values())
    with_tokens = [t for t in tries if t.prompt_tokens is not None and t.completion_tokens is not None]
    judged_with_tokens = [t for t in with_tokens if t.outcome is not None]
    spent = sum(t.prompt_tokens + t.completion_tokens for t in judged_with_tokens)
    return {
        "tries": len(tries),
        "known": len(known),
        "successes": successes,
        "success_rate": successes / len(known) if known else None,
        "pass_hat_k": {str(j): pass_hat_k(counts, j) for j in range(1, k + 1)},
        "pass_at_k": {str(j): pass_at_k(counts, j) for j in range(1, k + 1)},
        "mean_steps": _mean([t.steps for t in tries if t.steps is not None]),
        "prompt_tokens": _mean([t.prompt_tokens for t in tries if t.prompt_tokens is not None]),
        "completion_tokens": _mean([t.completion_tokens for t in tries if t.completion_tokens is not None]),
        "memory_tokens": _mean([t.memory_tokens for t in tries]) or 0.0,
        "tokens_per_try": _mean([t.prompt_tokens + t.completion_tokens for t in with_tokens]),
        "cost_per_try": _mean([t.cost for t in tries if t.cost is not None]),
        "success_per_1k_tokens": (1000 * sum(t.outcome for t in judged_with_tokens) / spent if spent else None),
        "run_to_run_sd": run_to_run_sd(tries),
    }


# --- paired comparison ------------------------------------------------------------------------------


def paired_differences(first: dict[str, tuple[int, int]], second: dict[str, tuple[int, int]]) -> dict[str, Fraction]:
    """Per task known in both arms: share(first) − share(second), exactly."""
    return {
        key: Fraction(first[key][1], first[key][0]) - Fraction(second[key][1], second[key][0])
        for key in first
        if key in second
    }


def _integer_grid(differences: list[Fraction]) -> list[int]:
    """The differences as integers on their common grid (× the lcm of their denominators)."""
    scale = math.lcm(*(d.denominator for d in differences)) if differences else 1
    return [int(d * scale) for d in differences]


def sign_flip_p(differences: list[Fraction], *, seed: int = SEED) -> tuple[float, bool]:
    """(two-sided p-value, exact?) of the sign-flip permutation test of the mean difference = 0."""
    grid = _integer_grid(differences)
    values = [abs(v) for v in grid if v]
    if not values:
        return 1.0, True
    observed = abs(sum(grid))
    total = sum(values)
    if len(values) * (2 * total + 1) <= EXACT_WORK_MAX:
        # counts[s + total] = how many sign patterns give sum s; each task adds ±v.
        counts = [0] * (2 * total + 1)
        counts[total] = 1
        reach = 0
        for v in values:
            new = [0] * (2 * total + 1)
            for s in range(total - reach, total + reach + 1):
                if counts[s]:
                    new[s - v] += counts[s]
                    new[s + v] += counts[s]
            counts, reach = new, reach + v
        hits = sum(c for s, c in enumerate(counts) if abs(s - total) >= observed)
        return hits / 2 ** len(values), True
    rng = random.Random(seed)
    hits = sum(abs(sum(v if rng.random() < 0.5 else -v for v in values)) >= observed for _ in range(MONTE_CARLO_DRAWS))
    return (1 + hits) / (1 + MONTE_CARLO_DRAWS), False


def bootstrap_interval(
    differences: list[float], *, draws: int = BOOTSTRAP_DRAWS, seed: int = SEED, alpha: float = ALPHA
) -> tuple[float, float] | None:
    """Percentile (1 − alpha) interval of the mean difference from ``draws`` paired bootstrap resamples of
    the tasks; None with no task."""
    n = len(differences)
    if not n:
        return None
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(differences, k=n)) / n for _ in range(draws))
    low = means[math.floor(alpha / 2 * draws)]
    high = means[min(draws - 1, math.ceil((1 - alpha / 2) * draws) - 1)]
    return low, high


def verdict_of(*, tasks: int, difference: float, p_value: float, interval: tuple[float, float] | None) -> str:
    """The comparison's verdict from its test, its interval and how many tasks it rests on."""
    if tasks < MIN_TASKS:
        return NOT_ENOUGH
    if p_value < ALPHA and interval is not None:
        if difference > 0 and interval[0] > 0:
            return BETTER
        if difference < 0 and interval[1] < 0:
            return WORSE
    return NO_DIFFERENCE


def flipped_tasks(first: dict[str, tuple[int, int]], second: dict[str, tuple[int, int]]) -> dict[str, list[str]]:
    """Tasks known in both arms that every known try failed in one arm and at least one succeeded in the
    other: "better" when ``first`` is the arm that succeeded, "worse" when ``second`` is. In ``first``'s order."""
    better = [key for key in first if key in second and first[key][1] > 0 and second[key][1] == 0]
    worse = [key for key in first if key in second and first[key][1] == 0 and second[key][1] > 0]
    return {"better": better, "worse": worse}


def paired_comparison(first: dict[str, tuple[int, int]], second: dict[str, tuple[int, int]]) -> dict:
    """``first`` against ``second`` (per task: known tries, successes): the mean paired difference in
    success share, its bootstrap interval, the sign-flip p-value, the verdict, the method and the
    flipped tasks (the contract's comparison, without "arm" and "versus"), plus "tasks"."""
    differences = paired_differences(first, second)
    values = list(differences.values())
    p_value, exact = sign_flip_p(values)
    floats = [float(d) for d in values]
    difference = sum(floats) / len(floats) if floats else 0.0
    interval = bootstrap_interval(floats)
    test = (
        f"exact sign-flip permutation test over the 2^{sum(1 for d in values if d)} sign patterns"
        if exact
        else f"sign-flip permutation test, {MONTE_CARLO_DRAWS:,} seeded Monte Carlo patterns"
    )
    return {
        "difference": difference,
        "interval": list(interval) if interval else [0.0, 0.0],
        "p_value": p_value,
        "verdict": verdict_of(tasks=len(values), difference=difference, p_value=p_value, interval=interval),
        "method": (
            f"paired by task ({len(values)} tasks): {test}; 95% paired bootstrap percentile interval, "
            f"{BOOTSTRAP_DRAWS:,} resamples of the tasks"
        ),
        "flipped": flipped_tasks(first, second),
        "tasks": len(values),
    }
