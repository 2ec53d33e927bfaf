"""A rate from ``x`` of ``n`` cases, the one rule every page that states a
share follows (trust audit, dashboard, reviewers, judge experiments): from
MIN_CASES cases up it is a percentage with its counts; below, only the
counts and how many more cases a rate needs, never "100 %" from one case.
templates/includes/rate.html shows one on a page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

# The fewest cases a rate is stated from, everywhere.
MIN_CASES = 5


@dataclass(frozen=True)
class CaseRate:
    x: int
    n: int

    minimum: ClassVar[int] = MIN_CASES

    @property
    def enough(self) -> bool:
        return self.n >= MIN_CASES

    @property
    def value(self) -> float | None:
        """``x / n`` from MIN_CASES cases up; None below."""
        return self.x / self.n if self.enough else None

    @property
    def needed(self) -> int:
        """How many more cases a rate needs (0 once it has enough)."""
        return max(0, MIN_CASES - self.n)

    @property
    def counts(self) -> str:
        return f"{self.x} of {self.n}" if self.n else "no case yet"

    @property
    def too_few(self) -> str:
        """ "a rate needs 5 cases, 4 more" ("" once there are enough)."""
        return "" if self.enough else f"a rate needs {MIN_CASES} cases, {self.needed} more"

    @property
    def text(self) -> str:
        """ "80% (8 of 10)"; below MIN_CASES "1 of 1 (a rate needs 5 cases, 4 more)"."""
        if not self.enough:
            return f"{self.counts} ({self.too_few})"
        return f"{self.value:.0%} ({self.x} of {self.n})"
