"""Outcome-weighted ranking, the second phase of a retrieval (opt-in per
bank): the semantic candidates reordered by similarity blended with each
item's utility, Impact's measured effect shrunk toward zero while its
observations are few (docs/retrieval.md gives the formula)."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.models import Bank
from memories.items.models import MemoryItem
from memories.learning.models import BankLearning
from memories.learning.selectors import bank_learning


def ranking_candidates(k: int) -> int:
    """How many semantic candidates phase one fetches for ``k`` served when
    ranking is on: half as many again (at least 2 more). A utility moves a
    score by at most the weight times the effect, so items far below the
    k-th similarity cannot climb in; more candidates only cost search time."""
    return k + max(2, k // 2)


@dataclass(frozen=True)
class ScoreParts:
    """Why an item was served where it was: its cosine ``similarity`` to the
    query, its ``utility`` (shrunk effect), the judged retrievals ``n`` behind
    it, and the ``score`` the order follows (the similarity when ranking is off)."""

    similarity: float
    utility: float
    n: int
    score: float


def item_utility(*, effect: float | None, n: int, prior: int) -> float:
    """``effect`` · n / (n + prior): 0 with no observation, half the measured
    effect at ``prior`` observations, the whole effect as n grows."""
    if effect is None or n <= 0:
        return 0.0
    return effect * n / (n + prior)


# A bank that does not rank: its items' utility is shown with the default shrinkage, and weighs nothing.
_NOT_RANKING = BankLearning(utility_weight=0.0)


def score_parts(pairs: list[tuple[MemoryItem, float]], *, bank: Bank) -> None:
    """Set ``score_parts`` (ScoreParts) on each item of ``pairs`` (item,
    similarity). Reads the bank's learning policy (one query) only when it
    ranks by utility."""
    learning = bank_learning(bank=bank) if bank.utility_ranking and pairs else _NOT_RANKING
    weight = learning.utility_weight if bank.utility_ranking else 0.0
    for item, similarity in pairs:
        n = item.outcome_n or 0
        utility = round(item_utility(effect=item.outcome_effect, n=n, prior=learning.utility_prior), 4)
        item.score_parts = ScoreParts(
            similarity=similarity, utility=utility, n=n, score=round(similarity + weight * utility, 4)
        )


def ranked(pairs: list[tuple[MemoryItem, float]], *, bank: Bank) -> list[tuple[MemoryItem, float]]:
    """``pairs`` with their score parts, in the order the bank serves them:
    by score, best first, when utility ranking is on (ties keep the
    similarity order: a stable sort), as given otherwise."""
    score_parts(pairs, bank=bank)
    if not bank.utility_ranking:
        return pairs
    return sorted(pairs, key=lambda pair: -pair[0].score_parts.score)
