"""What waits in each bank for a user, for the home page: items to review,
trajectories to judge, disagreements. The counts belong to the apps above this
one (memories, trajectories), which this app never imports: each registers a
counter in its AppConfig.ready, and the home page asks every counter once for
all the user's banks, so its queries do not grow with the number of banks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from accounts.models import Bank


@dataclass(frozen=True)
class BankWork:
    """``count`` things of one kind waiting in a bank: "3 items waiting for your review"."""

    priority: int  # the lowest waiting one is the bank's next step
    count: int
    text: str  # what waits, counted: "3 items waiting for your review"
    action: str  # the next step's link text: "Review them"
    url: str


# counter(banks, user) -> {bank.pk: [BankWork, ...]}: one call for all of the user's banks.
WorkCounter = Callable[[list[Bank], object], dict[int, list[BankWork]]]
_COUNTERS: list[WorkCounter] = []


def bank_work_counter_register(counter: WorkCounter) -> None:
    """Count a kind of waiting work on the home page (called from an app's AppConfig.ready; idempotent)."""
    if counter not in _COUNTERS:
        _COUNTERS.append(counter)


def banks_work(*, banks: Iterable[Bank], user) -> dict[int, list[BankWork]]:
    """Per bank (by pk), what waits for ``user`` (only what is not zero), the next step first. One call
    per registered counter, whatever the number of banks."""
    banks = list(banks)
    found: dict[int, list[BankWork]] = {bank.pk: [] for bank in banks}
    if not banks:
        return found
    for counter in _COUNTERS:
        for bank_pk, work in counter(banks, user).items():
            found[bank_pk] += [w for w in work if w.count]
    for work in found.values():
        work.sort(key=lambda w: w.priority)
    return found
