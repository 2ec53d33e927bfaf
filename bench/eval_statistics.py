"""Simulated evaluation runs with a known truth, compared by the real statistics
(trajectories.evaluation.statistics.paired_comparison), to check what an evaluation run's verdict
promises: how often it says "better" (or "worse") when the arms are equal, and how often it finds a
true 10-point lift with 50 tasks × 3 tries.

A simulated run: ``tasks`` tasks, each with its own difficulty, a success probability drawn as
low + (high − low) · Beta(2, 2); two arms (the candidate and production) try every task ``tries``
times, each try succeeding independently with the arm's probability on that task. Two ways the arms
can be equal:

- identical: both arms have the task's probability;
- equal on average: each arm's probability on a task moves by its own Uniform(−w, +w) deviation,
  the same on every try (the memories an arm serves for a task help or hurt that task on every
  try), so tries of one task in one arm are correlated. A test that counts tries as independent is
  fooled by this; the paired test by task is not.

The lift adds ``lift`` to the candidate's probability on every task (the bounds keep every probability
in 0..1, so the true lift is exactly ``lift``). Alongside, the naive test a spreadsheet would do: the
pooled two-proportion z-test on all tries of each arm, as if every try were independent. Pure Python,
seeded ``random.Random``; each rate comes with its Monte Carlo standard error.

    .venv/bin/python bench/eval_statistics.py --runs 2000

tests/trajectories/evaluation/test_statistics_simulation.py runs it smaller and seeded."""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

# Run as a script, the app's packages are one level up.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trajectories.evaluation.statistics import ALPHA, BETTER, WORSE, paired_comparison
from trajectories.impact.statistics import two_proportion_p

DEVIATION = 0.3
"""w of the equal-on-average arms: an arm moves a task's success probability by up to ±30 points."""


def simulate_run(
    rng: random.Random, *, tasks: int, tries: int, lift: float = 0.0, deviation: float = 0.0
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """One run's (candidate, production) counts per task: (tries, successes)."""
    low, high = deviation, 1.0 - lift - deviation
    candidate, production = {}, {}
    for i in range(tasks):
        p = low + (high - low) * rng.betavariate(2, 2)
        for counts, shift in ((candidate, lift), (production, 0.0)):
            q = p + shift + (rng.uniform(-deviation, deviation) if deviation else 0.0)
            counts[f"task-{i}"] = (tries, sum(rng.random() < q for _ in range(tries)))
    return candidate, production


def naive_verdict(candidate: dict[str, tuple[int, int]], production: dict[str, tuple[int, int]]) -> str:
    """The pooled two-proportion z-test on every try, as if tries were independent."""
    x1, n1 = sum(c for _, c in candidate.values()), sum(n for n, _ in candidate.values())
    x2, n2 = sum(c for _, c in production.values()), sum(n for n, _ in production.values())
    p = two_proportion_p(x1, n1, x2, n2)
    if p is None or p >= ALPHA:
        return "no_difference"
    return BETTER if x1 / n1 > x2 / n2 else WORSE


def scenario(runs: int, *, seed: int, tasks: int = 50, tries: int = 3, lift: float = 0.0, deviation: float = 0.0):
    """The share of ``runs`` simulated runs the paired comparison (and the naive test) called "better"
    and "worse", each with its Monte Carlo standard error."""
    rng = random.Random(seed)
    found = {"better": 0, "worse": 0, "naive_better": 0, "naive_worse": 0}
    for _ in range(runs):
        candidate, production = simulate_run(rng, tasks=tasks, tries=tries, lift=lift, deviation=deviation)
        verdict = paired_comparison(candidate, production)["verdict"]
        naive = naive_verdict(candidate, production)
        found["better"] += verdict == BETTER
        found["worse"] += verdict == WORSE
        found["naive_better"] += naive == BETTER
        found["naive_worse"] += naive == WORSE
    rates = {key: count / runs for key, count in found.items()}
    rates["any"] = rates["better"] + rates["worse"]
    rates["naive_any"] = rates["naive_better"] + rates["naive_worse"]
    return {key: (rate, math.sqrt(rate * (1 - rate) / runs)) for key, rate in rates.items()}


SCENARIOS = {
    "equal arms, identical per task": {"lift": 0.0, "deviation": 0.0},
    "equal arms on average, ±30-point deviations per task and arm": {"lift": 0.0, "deviation": DEVIATION},
    "+10-point lift, identical otherwise": {"lift": 0.10, "deviation": 0.0},
    "+10-point lift, ±30-point deviations per task and arm": {"lift": 0.10, "deviation": DEVIATION},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--tries", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"{args.runs} runs per scenario, {args.tasks} tasks × {args.tries} tries\n")
    print('| scenario | "better" | "worse" | naive z-test "better" | naive "better" or "worse" |')
    print("|---|---:|---:|---:|---:|")
    for seed, (name, truth) in enumerate(SCENARIOS.items(), start=1):
        found = scenario(args.runs, seed=seed, tasks=args.tasks, tries=args.tries, **truth)
        cells = [f"{found[key][0] * 100:.1f}% ± {found[key][1] * 100:.1f}" for key in ("better", "worse")]
        cells += [f"{found[key][0] * 100:.1f}% ± {found[key][1] * 100:.1f}" for key in ("naive_better", "naive_any")]
        print(f"| {name} | {' | '.join(cells)} |")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
