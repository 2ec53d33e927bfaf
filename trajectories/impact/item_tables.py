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
  changed of the banks read within WATCH_SECONDS, so a reader rarely waits
  for one; older, the request recomputes it."""

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
    cache.set(key, kept, KEPT_SECONDS)
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
    and whether they are current (no tally row of the bank appended since)."""

    outcomes: list[ItemOutcome]
    computed_at: datetime
    current: bool


def kept_item_table(*, bank: Bank, since: datetime | None, report: ImpactReport, limit: int = PAGE_ITEMS) -> KeptItems:
    """``item_outcomes`` of the report's window and period, from the kept
    table when it may be served (see the module); what the page and
    ``GET /api/v1/impact`` show."""
    if report.treatment.triggered + report.holdout.triggered < KEPT_MIN_RETRIEVALS:
        outcomes = item_outcomes(bank=bank, since=since, report=report, limit=limit)
        return KeptItems(outcomes, timezone.now(), True)
    BIG_BANKS.mark(bank.pk)  # read now: beat keeps its tables computed for WATCH_SECONDS
    key = _key(bank.pk, since, report, limit)
    kept = cache.get(key)
    current = True
    if kept is not None and _changed_since(bank.pk, kept["fingerprint"]):
        current = False
        if timezone.now() - kept["at"] > timedelta(seconds=KEPT_STALE_SECONDS):
            kept, current = None, True
    if kept is None:
        kept = _compute(bank, since, report, limit, key)
    report.item_comparison = kept["comparison"]
    return KeptItems(_with_items(bank, [ItemOutcome(**vars(o)) for o in kept["outcomes"]]), kept["at"], current)


def kept_item_outcomes(
    *, bank: Bank, since: datetime | None, report: ImpactReport, limit: int = PAGE_ITEMS
) -> tuple[list[ItemOutcome], datetime | None]:
    """``kept_item_table``'s rows, and the moment they were computed when
    sums changed since (None: the figures are current)."""
    table = kept_item_table(bank=bank, since=since, report=report, limit=limit)
    return table.outcomes, None if table.current else table.computed_at


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
