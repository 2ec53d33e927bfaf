"""When and how long to wait before retrying a request.

Retried: 429 (after its ``Retry-After``), 5xx, and connection errors or
timeouts. Every request this client sends is safe to repeat: reads are
reads, ``record`` carries an ``external_id`` (a repeat answers the same
trajectory), and a repeated retrieval only logs one more retrieval."""

from __future__ import annotations

import random
from dataclasses import dataclass

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` counts the first try (1 = never retry). Waits grow as
    ``backoff_base * 2**(n-1)`` up to ``backoff_max`` (jittered: a random
    wait between half that and all of it, so clients retrying together
    spread out); a
    ``Retry-After`` is honoured as given. No retry is made once the waits
    would add up past ``max_total_delay`` seconds."""

    max_attempts: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_total_delay: float = 30.0
    jitter: bool = True

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return max(0.0, retry_after)
        ceiling = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling) if self.jitter else ceiling

    def next_delay(self, attempt: int, waited: float, retry_after: float | None = None) -> float | None:
        """The wait before the next attempt, or None when the budget is spent."""
        if attempt >= self.max_attempts:
            return None
        delay = self.delay(attempt, retry_after)
        if waited + delay > self.max_total_delay:
            return None
        return delay


NO_RETRY = RetryPolicy(max_attempts=1)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds; an HTTP date counts as unknown)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
