"""The Impact page's per-item table, kept between requests in Django's cache.

Every item of a window is tested (Benjamini–Hochberg and the shrinkage's τ²
need them all), so computing the table reads every item's sums and runs
the statistics on each: seconds on a bank of a hundred thousand items. The
table shown (``item_outcomes``' rows, without the items' titles, which are
read fresh) is kept per bank, window and holdout period:

- a window with fewer than KEPT_MIN_RETRIEVALS triggered retrievals (the
  report's, in its period) is computed on each request: tens of milliseconds;
- a bigger one is kept. It is served as is while no tally row of the bank
  was appended since it was computed (the tallies are append-only signed
  rows, so no new row means the same sums: exact); otherwise for up to
  KEPT_STALE_SECONDS after it was computed, and the page says as of when;
  beat's ``item_tables_refresh`` recomputes every minute those that
  changed of the banks read within WATCH_SECONDS; older, it is still
  served (as of when), one recompute is queued for a worker
  (``recomputing``), and the page polls until the worker stored it;
- a bigger one that is not kept (no reader for an hour, a cache clear) is
  not computed on the request either: the request queues its computation
  and shows none (``pending``); the page polls until a worker stored it.

A request never computes a big window's table: at a million trajectories
that takes seconds. A queued computation is marked in the cache for
reasoningbank_site.kept_queue.QUEUED_SECONDS (``queue_once``: ten readers
queue one), the task clears the mark when done, and it computes only if the
table is still missing or outdated when it runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db.models import Max
from django.utils import timezone

from accounts.models import Bank
from memories.items.models import MemoryItem
from memories.serving.models import RetrievalTally
from reasoningbank_site.kept import WATCH_SECONDS, BankRoster
from reasoningbank_site.kept_queue import kept_store, queue_once, queued_clear
from trajectories.impact.items import ItemOutcome, item_outcomes
from trajectories.impact.report import WINDOWS, ImpactReport, bank_impact, window_start
from trajectories.impact.tallies import window_days
from trajectories.impact.verdicts import Verdict

PAGE_ITEMS = 50
"""Rows of the Impact page's per-item table."""
KEPT_MIN_RETRIEVALS = 5000
"""Triggered retrievals of a window (both arms, its period) from which its table is kept."""
KEPT_STALE_SECONDS = 300
KEPT_SECONDS = 3600
"""How long the cache holds a table (beat renews the big ones' while they change)."""
BIG_BANKS = BankRoster("impact-items")
"""The big banks whose tables were read (the page, the API): beat's refresh recomputes theirs."""
RECENT_IDS = 10_000
"""Ids below the newest in which a late commit is still noticed (see _fingerprint)."""


def _key(bank_id: int, since: datetime | None, report: ImpactReport, limit: int) -> str:
    first, last = window_days(since, report.until)
    period = report.period
    return f"impact-items:{bank_id}:{first}:{last}:{period.fraction}:{period.first_day}:{report.verdict == Verdict.NO_HOLDOUT}:{limit}"


def _fingerprint(bank_id: int, newest: int | None = None) -> tuple[int, int]:
    """The newest tally row (of any bank) and how many of the bank's rows lie
    in the last RECENT_IDS ids up to it: a row appended since, or committed
    late with an id below the newest (a longer transaction), changes it. Read
    before the sums, so a change during their computation only recomputes."""
    if newest is None:
        newest = RetrievalTally.objects.aggregate(newest=Max("pk"))["newest"] or 0
    recent = RetrievalTally.objects.filter(pk__gt=newest - RECENT_IDS, pk__lte=newest, bank_id=bank_id).count()
    return newest, recent


def _changed_since(bank_id: int, fingerprint: tuple[int, int]) -> bool:
    """Whether a tally row of the bank was appended after the fingerprint was taken."""
    newest = fingerprint[0]
    if RetrievalTally.objects.filter(pk__gt=newest, bank_id=bank_id).exists():
        return True
    return _fingerprint(bank_id, newest) != tuple(fingerprint)


def _compute(bank: Bank, since: datetime | None, report: ImpactReport, limit: int, key: str) -> dict:
    fingerprint = _fingerprint(bank.pk)  # before the sums
    outcomes = item_outcomes(bank=bank, since=since, report=report, limit=limit)
    for outcome in outcomes:
        outcome.item = None
    kept = {
        "outcomes": outcomes,
        "comparison": report.item_comparison,
        "fingerprint": fingerprint,
        "at": timezone.now(),
    }
    kept_store(key, kept, KEPT_SECONDS)  # computed (by beat or the queued task): a reader may queue the next one
    return kept


def _with_items(bank: Bank, outcomes: list[ItemOutcome]) -> list[ItemOutcome]:
    items = {
        item.public_id: item
        for item in MemoryItem.objects.filter(bank=bank, public_id__in=[o.public_id for o in outcomes]).only(
            "public_id", "title", "status", "served_count", "bank_id"
        )
    }
    for outcome in outcomes:
        outcome.item = items.get(outcome.public_id)
    return outcomes


@dataclass
class KeptItems:
    """A window's per-item table: the top rows, when they were computed,
    whether they are current (no tally row of the bank appended since),
    whether a recompute of outdated rows is queued (``recomputing``), and
    whether none are kept yet and their computation is queued (``pending``:
    no rows, no time)."""

    outcomes: list[ItemOutcome]
    computed_at: datetime | None
    current: bool
    recomputing: bool = False
    pending: bool = False


def _outdated(bank_id: int, kept: dict) -> bool:
    """Whether a kept table is too old to be served without queuing a
    recompute: changed since, and computed over KEPT_STALE_SECONDS ago."""
    too_old = timezone.now() - kept["at"] > timedelta(seconds=KEPT_STALE_SECONDS)
    return too_old and _changed_since(bank_id, kept["fingerprint"])


def _queue(key: str, bank_id: int, since: datetime | None, limit: int) -> None:
    """Queue one computation of the table (a worker's, on the maintenance
    queue); none while one queued and not done (reasoningbank_site.kept_queue)."""
    queue_once(key, "trajectories.impact_item_table", bank_id, since.isoformat() if since else None, limit)


def kept_item_table(*, bank: Bank, since: datetime | None, report: ImpactReport, limit: int = PAGE_ITEMS) -> KeptItems:
    """``item_outcomes`` of the report's window and period, from the kept
    table when it may be served (see the module); what the page and
    ``GET /api/v1/impact`` show. A big window's is never computed here."""
    if report.treatment.triggered + report.holdout.triggered < KEPT_MIN_RETRIEVALS:
        outcomes = item_outcomes(bank=bank, since=since, report=report, limit=limit)
        return KeptItems(outcomes, timezone.now(), True)
    BIG_BANKS.mark(bank.pk)  # read now: beat keeps its tables computed for WATCH_SECONDS
    key = _key(bank.pk, since, report, limit)
    kept = cache.get(key)
    if kept is None:
        _queue(key, bank.pk, since, limit)
        return KeptItems([], None, True, pending=True)
    current = not _changed_since(bank.pk, kept["fingerprint"])
    recomputing = not current and timezone.now() - kept["at"] > timedelta(seconds=KEPT_STALE_SECONDS)
    if recomputing:
        _queue(key, bank.pk, since, limit)
    report.item_comparison = kept["comparison"]
    outcomes = _with_items(bank, [ItemOutcome(**vars(o)) for o in kept["outcomes"]])
    return KeptItems(outcomes, kept["at"], current, recomputing)


def item_table_compute(*, bank_id: int, since: datetime | None, limit: int) -> bool:
    """The queued computation (a worker's): compute the window's table when
    it is still missing or outdated, then clear its queued mark. Returns
    whether it computed."""
    bank = Bank.objects.filter(pk=bank_id, archived_at__isnull=True).select_related("team").first()
    if bank is None:
        return False
    report = bank_impact(bank=bank, since=since)
    key = _key(bank.pk, since, report, limit)
    try:
        kept = cache.get(key)
        if kept is not None and not _outdated(bank.pk, kept):
            return False
        _compute(bank, since, report, limit, key)
        return True
    finally:
        queued_clear(key)


def item_tables_refresh() -> int:
    """Recompute the kept tables of the windows (the page's) of banks that
    had one kept, when big enough to keep and changed since; returns how
    many were recomputed. Run by beat."""
    refreshed = 0
    watched = BIG_BANKS.banks(within=WATCH_SECONDS)
    for bank in Bank.objects.filter(pk__in=watched, archived_at__isnull=True).select_related("team"):
        for days in WINDOWS.values():
            since = window_start(days)
            report = bank_impact(bank=bank, since=since)
            if report.treatment.triggered + report.holdout.triggered < KEPT_MIN_RETRIEVALS:
                continue
            key = _key(bank.pk, since, report, PAGE_ITEMS)
            kept = cache.get(key)
            if kept is None or _changed_since(bank.pk, kept["fingerprint"]):
                _compute(bank, since, report, PAGE_ITEMS, key)
                refreshed += 1
    return refreshed
