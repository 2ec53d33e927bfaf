"""Inter-annotator agreement on a bank's independent review decisions
(memories.review.policy_models.ReviewVote): Cohen's kappa per pair of reviewers over the
items both decided, and Fleiss' kappa over the bank's items with two or more
decisions, each with a 95% interval."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

from memories.review.policy_models import ReviewVote, VoteDecision

BOOTSTRAP_SAMPLES = 1000
Z95 = 1.959964


@dataclass
class Kappa:
    value: float | None  # None: undefined (fewer than 2 cases, or both always gave one answer)
    low: float | None
    high: float | None
    n: int  # items

    @property
    def text(self) -> str:
        if self.value is None:
            return f"n/a (n={self.n})"
        return f"{self.value:.2f} [{self.low:.2f} to {self.high:.2f}] n={self.n}"


@dataclass
class PairAgreement:
    first: str
    second: str
    kappa: Kappa
    agree: int


@dataclass
class BankAgreement:
    pairs: list[PairAgreement]
    fleiss: Kappa
    votes: int


def cohen_kappa(pairs: list[tuple[bool, bool]]) -> Kappa:
    """Cohen's kappa of two raters' yes/no answers, with the large-sample 95% interval
    (standard error sqrt(po(1 − po) / (n (1 − pe)²)), clipped to [−1, 1])."""
    n = len(pairs)
    if n < 2:
        return Kappa(None, None, None, n)
    po = sum(a == b for a, b in pairs) / n
    pa, pb = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    if pe >= 1:
        return Kappa(None, None, None, n)
    kappa = (po - pe) / (1 - pe)
    se = math.sqrt(po * (1 - po) / (n * (1 - pe) ** 2))
    return Kappa(kappa, max(-1.0, kappa - Z95 * se), min(1.0, kappa + Z95 * se), n)


def _fleiss(items: list[tuple[int, int]]) -> float | None:
    """Fleiss' kappa of (approvals, raters) per item, raters ≥ 2 (a varying number allowed)."""
    if not items:
        return None
    p_items = [(a * (a - 1) + (m - a) * (m - a - 1)) / (m * (m - 1)) for a, m in items]
    total = sum(m for _, m in items)
    p_yes = sum(a for a, _ in items) / total
    pe = p_yes**2 + (1 - p_yes) ** 2
    if pe >= 1:
        return None
    return (sum(p_items) / len(items) - pe) / (1 - pe)


def fleiss_kappa(items: list[tuple[int, int]], *, seed: int = 0) -> Kappa:
    """Fleiss' kappa with a 95% percentile bootstrap interval over the items (seeded: the page is stable)."""
    value = _fleiss(items)
    if value is None or len(items) < 2:
        return Kappa(None if len(items) < 2 else value, None, None, len(items))
    rng = random.Random(seed)
    samples = sorted(
        k for k in (_fleiss([rng.choice(items) for _ in items]) for _ in range(BOOTSTRAP_SAMPLES)) if k is not None
    )
    if not samples:
        return Kappa(value, None, None, len(items))
    low, high = samples[int(0.025 * len(samples))], samples[min(len(samples) - 1, int(0.975 * len(samples)))]
    return Kappa(value, low, high, len(items))


def bank_agreement(*, bank) -> BankAgreement:
    """Agreement of ``bank``'s reviewers on the items they decided independently (one query)."""
    by_item: dict[int, dict[str, bool]] = defaultdict(dict)
    rows = ReviewVote.objects.filter(item__bank=bank).values_list("item_id", "user__username", "decision")
    votes = 0
    for item_id, username, decision in rows:
        by_item[item_id][username] = decision == VoteDecision.APPROVE
        votes += 1
    reviewers = sorted({name for decided in by_item.values() for name in decided})
    pairs = []
    for first, second in combinations(reviewers, 2):
        both = [(d[first], d[second]) for d in by_item.values() if first in d and second in d]
        if both:
            pairs.append(PairAgreement(first, second, cohen_kappa(both), sum(a == b for a, b in both)))
    items = [(sum(d.values()), len(d)) for d in by_item.values() if len(d) >= 2]
    return BankAgreement(pairs=pairs, fleiss=fleiss_kappa(items), votes=votes)
