"""Simulated banks with known effects, analysed by the real statistics
(trajectories.impact: verdicts.assess and statistics.item_effects), to check what the Impact
page promises: interval coverage, false verdicts under continuous
monitoring, false per-item flags, and power.

A simulated bank: retrievals arrive one by one; each is held out with the
bank's fraction; its task has a topic whose difficulty varies (success
probability base ± 0.3), so outcomes of one task are correlated; 30% of
retrievals send back a MaTTS-style group of 2–4 trajectories of the same
task. Treatment adds ``effect`` to the success probability, and each served
item adds its own effect. Pure Python with a seeded ``random.Random``.

Run the full harness (the table in the docs):

    .venv/bin/python bench/impact_simulation.py --banks 2000

tests/bench/test_impact_simulation.py runs it fast and seeded."""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Run as a script, the app's packages are one level up.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trajectories.impact.arms import ArmSums
from trajectories.impact.statistics import item_effects
from trajectories.impact.verdicts import Decision, assess

FRACTIONS = (0.1, 0.2, 0.5)
TOPICS = 6
ITEMS_PER_TOPIC = 5
CANDIDATES = 3


@dataclass
class Look:
    judged: int
    decision: str
    estimate: float | None
    cs_low: float | None
    cs_high: float | None
    fixed_low: float | None
    fixed_high: float | None


@dataclass
class SimulatedBank:
    effect: float
    fraction: float
    looks: list[Look]
    items: list[tuple[int, float, int, float]]  # per item: served units, Σy, withheld units, Σy
    item_truth: list[float]


def simulate_bank(
    rng: random.Random,
    *,
    effect: float,
    fraction: float,
    judged: int = 1000,
    look_every: int = 50,
    group_share: float = 0.3,
    item_truth: list[float] | None = None,
    unreported_treatment_failures: float = 0.0,
    item_fraction: float = 0.0,
) -> SimulatedBank:
    """Run one bank until ``judged`` judged trajectories came back, calling
    assess() after every ``look_every`` of them. With ``item_fraction`` > 0
    (per-item randomisation, as retrieval_perform does), each candidate of a
    treatment retrieval is left out on its own with that probability (its
    effect then does not apply) and the item rows compare served with left
    out among treatment retrievals; otherwise served with the holdout arm."""
    item_truth = item_truth or [0.0] * (TOPICS * ITEMS_PER_TOPIC)
    base = rng.uniform(0.35, 0.65)
    spread = min(0.3, base - 0.05, 0.95 - base)
    topic_shift = [rng.uniform(-spread, spread) for _ in range(TOPICS)]
    arms = {"treatment": ArmSums(), "holdout": ArmSums()}
    item_rows = [[0, 0.0, 0, 0.0] for _ in item_truth]
    looks: list[Look] = []
    total, next_look = 0, look_every
    while total < judged:
        held_out = rng.random() < fraction
        arm = arms["holdout" if held_out else "treatment"]
        topic = rng.randrange(TOPICS)
        candidates = rng.sample(range(topic * ITEMS_PER_TOPIC, (topic + 1) * ITEMS_PER_TOPIC), CANDIDATES)
        p = base + topic_shift[topic]
        left_out = set()
        if not held_out:
            left_out = {i for i in candidates if item_fraction and rng.random() < item_fraction}
            p += effect + sum(item_truth[i] for i in candidates if i not in left_out)
        p = min(max(p, 0.0), 1.0)
        size = 1 if rng.random() >= group_share else rng.randint(2, 4)
        outcomes = [rng.random() < p for _ in range(size)]
        if not held_out and unreported_treatment_failures:
            outcomes = [o for o in outcomes if o or rng.random() >= unreported_treatment_failures]
        arm.retrievals += 1
        arm.triggered += 1
        if outcomes:
            y = sum(outcomes) / len(outcomes)
            arm.units += 1
            arm.y_sum += y
            arm.y_sq_sum += y * y
            arm.trajectories += len(outcomes)
            arm.judged += len(outcomes)
            arm.successes += sum(outcomes)
            for i in candidates:
                row = item_rows[i]
                if held_out and item_fraction:
                    continue  # randomised comparison: treatment retrievals only
                if held_out or i in left_out:
                    row[2] += 1
                    row[3] += y
                else:
                    row[0] += 1
                    row[1] += y
        total += len(outcomes)
        while total >= next_look:
            found = assess(arms["treatment"], arms["holdout"], fraction)
            looks.append(
                Look(
                    next_look,
                    found.decision,
                    found.estimate,
                    found.cs_low,
                    found.cs_high,
                    found.fixed_low,
                    found.fixed_high,
                )
            )
            next_look += look_every
    return SimulatedBank(effect, fraction, looks, [tuple(r) for r in item_rows], item_truth)


def _covers(low, high, value) -> bool:
    return low is not None and low <= value <= high


def coverage(banks: int, seed: int = 1, judged: int = 1000) -> dict:
    """Share of banks (effects drawn in ±5 points) whose fixed-horizon
    interval at ``judged`` trajectories covers the true difference, and whose
    always-valid interval covers it at every look."""
    rng = random.Random(seed)
    fixed = always = 0
    for n in range(banks):
        bank = simulate_bank(rng, effect=rng.uniform(-0.05, 0.05), fraction=FRACTIONS[n % 3], judged=judged)
        last = bank.looks[-1]
        fixed += _covers(last.fixed_low, last.fixed_high, bank.effect)
        always += all(_covers(look.cs_low, look.cs_high, bank.effect) for look in bank.looks if look.cs_low is not None)
    return {"fixed_coverage": fixed / banks, "always_valid_coverage": always / banks}


def peeking(banks: int, seed: int = 2, judged: int = 2000, look_every: int = 50) -> dict:
    """No effect; look after every ``look_every`` judged trajectories up to
    ``judged`` and stop at the first verdict: the share of banks ever told
    "helps" or "hurts" — by the page's rule, and (for contrast) by the
    fixed-horizon interval with 30 retrievals per arm, a naive rule."""
    rng = random.Random(seed)
    false_verdicts = false_fixed = 0
    for n in range(banks):
        bank = simulate_bank(rng, effect=0.0, fraction=FRACTIONS[n % 3], judged=judged, look_every=look_every)
        false_verdicts += any(look.decision in (Decision.HELPS, Decision.HURTS) for look in bank.looks)
        false_fixed += any(
            look.decision != Decision.NOT_ENOUGH_DATA and (look.fixed_low > 0 or look.fixed_high < 0)
            for look in bank.looks
        )
    return {"false_verdict_rate": false_verdicts / banks, "fixed_rule_false_verdict_rate": false_fixed / banks}


def item_flags(banks: int, seed: int = 3, judged: int = 1000, fraction: float = 0.5) -> dict:
    """30 neutral items (topics of different difficulty): the share of banks
    where any item is flagged "may hurt" (compared with the holdout arm)."""
    rng = random.Random(seed)
    flagged = 0
    for _ in range(banks):
        bank = simulate_bank(rng, effect=0.0, fraction=fraction, judged=judged, look_every=judged)
        flagged += any(e.significant and e.difference < 0 for e in item_effects(bank.items))
    return {"false_item_flag_rate": flagged / banks}


ITEM_FRACTIONS = (0.1, 0.2, 0.5)


def item_randomised(
    banks: int, seed: int = 6, judged: int = 1000, fraction: float = 0.1, item_fractions=ITEM_FRACTIONS
) -> dict:
    """Per-item randomisation (holdout ``fraction`` 0.1), per item fraction:
    the share of banks with 30 neutral items where any item is flagged
    (either way), and the share that flag a −25-point item "may hurt" among
    29 neutral ones, at ``judged`` judged trajectories."""
    rng = random.Random(seed)
    result = {}
    truth = [0.0] * (TOPICS * ITEMS_PER_TOPIC)
    truth[0] = -0.25
    for item_fraction in item_fractions:
        flagged = found = 0
        for _ in range(banks):
            neutral = simulate_bank(
                rng, effect=0.0, fraction=fraction, judged=judged, look_every=judged, item_fraction=item_fraction
            )
            flagged += any(e.significant for e in item_effects(neutral.items))
            hurting = simulate_bank(
                rng,
                effect=0.0,
                fraction=fraction,
                judged=judged,
                look_every=judged,
                item_fraction=item_fraction,
                item_truth=truth,
            )
            first = item_effects(hurting.items)[0]
            found += first.significant and first.difference < 0
        result[f"randomised_false_item_flag_rate_at_{item_fraction}"] = flagged / banks
        result[f"randomised_item_power_at_{item_fraction}"] = found / banks
    return result


def power(banks: int, seed: int = 4, judged: int = 1000) -> dict:
    """At ``judged`` judged trajectories: the share of banks that say
    "helps" for a +10-point bank (by fraction), and that flag a −25-point
    item (holdout 0.5, among 29 neutral items)."""
    rng = random.Random(seed)
    result = {}
    for fraction in FRACTIONS:
        helps = 0
        for _ in range(banks):
            bank = simulate_bank(rng, effect=0.10, fraction=fraction, judged=judged, look_every=judged)
            helps += bank.looks[-1].decision == Decision.HELPS
        result[f"bank_power_at_{fraction}"] = helps / banks
    truth = [0.0] * (TOPICS * ITEMS_PER_TOPIC)
    truth[0] = -0.25
    found = 0
    for _ in range(banks):
        bank = simulate_bank(rng, effect=0.0, fraction=0.5, judged=judged, look_every=judged, item_truth=truth)
        first = item_effects(bank.items)[0]
        found += first.significant and first.difference < 0
    result["item_power"] = found / banks
    return result


def reporting(banks: int, seed: int = 5, judged: int = 1000) -> dict:
    """No effect, but 40% of the treatment arm's failures never report back:
    the share of banks told "helps", and of banks whose verdict is withheld."""
    rng = random.Random(seed)
    helps = withheld = 0
    for n in range(banks):
        bank = simulate_bank(
            rng,
            effect=0.0,
            fraction=FRACTIONS[n % 3],
            judged=judged,
            look_every=judged,
            unreported_treatment_failures=0.4,
        )
        helps += bank.looks[-1].decision == Decision.HELPS
        withheld += bank.looks[-1].decision == Decision.WITHHELD
    return {"biased_helps_rate": helps / banks, "withheld_rate": withheld / banks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--banks", type=int, default=2000)
    args = parser.parse_args()
    started = time.perf_counter()
    results = {}
    for check in (coverage, peeking, item_flags, power, reporting, item_randomised):
        results.update(check(args.banks))
        print(check.__name__, {k: round(v, 4) for k, v in results.items()}, f"{time.perf_counter() - started:.0f}s")
    print("| check | result |\n|---|---|")
    for key, value in results.items():
        print(f"| {key} | {value * 100:.1f}% |")


if __name__ == "__main__":
    main()
