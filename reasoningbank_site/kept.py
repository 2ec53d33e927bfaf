"""Which banks' kept figures beat keeps warm: a roster per kind of figure (the Impact item tables, the
dashboard's report), kept in Django's cache (the shared database cache: every web worker and the beat
worker read the same one) as {bank id: when last marked}.

A page marks its bank when it reads kept figures worth keeping (a big bank's); beat's task reads the banks
marked within a while and recomputes their figures before they expire, so a reader finds them computed. A
roster whose figures vary by more than the bank marks a tuple (bank id, then what else names them). A
mark is written at most once per MARK_EVERY_SECONDS per bank, not on every view. Two workers that mark
different banks at the same moment may lose one mark: the next view marks it again."""

from __future__ import annotations

import time
from collections.abc import Hashable

from django.core.cache import cache

MARK_EVERY_SECONDS = 60
WATCH_SECONDS = 3600
"""How long after a bank's kept figures were last read beat keeps recomputing them (each kind's default)."""


class BankRoster:
    def __init__(self, name: str) -> None:
        self.key = f"kept:{name}:banks"

    def _marks(self) -> dict[Hashable, float]:
        marks = cache.get(self.key)
        return marks if isinstance(marks, dict) else {}

    def mark(self, bank_id: Hashable) -> None:
        """Note that the bank's kept figures were read (or computed) now."""
        marks = self._marks()
        now = time.time()
        if now - marks.get(bank_id, 0) >= MARK_EVERY_SECONDS:
            cache.set(self.key, marks | {bank_id: now}, None)

    def banks(self, *, within: float | None = None) -> list[Hashable]:
        """The banks marked within the last ``within`` seconds (None: ever); older marks are dropped."""
        marks = self._marks()
        if within is None:
            return list(marks)
        now = time.time()
        recent = {bank_id: at for bank_id, at in marks.items() if now - at < within}
        if len(recent) < len(marks):
            cache.set(self.key, recent, None)
        return list(recent)
