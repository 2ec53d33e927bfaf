"""The reviewers page's figures (each reviewer's statistics over the period, reviewer_stats, and the bank's
inter-annotator agreement, bank_agreement) kept like the dashboard's report (trajectories.dashboard.report),
with its cache time, size and beat task.

Both grow with the bank: the period's item versions are joined to every item of the bank, and the review votes
are the bank's. A small bank's figures are computed on every view, so a new decision shows at once. A big bank's
(the period's decisions and verdicts plus the bank's approved items reach report.KEPT_MIN_ROWS) are kept per
period and time zone for REPORT_CACHE_SECONDS; the page states when they were computed and links to recomputing
them; a view marks them, and beat's ``dashboard_reports`` recomputes the marked ones before they expire.

As with the dashboard's report, a request never computes a big bank's figures: with none kept, the view queues
their computation (``reviewer_compute``, once: reasoningbank_site.kept_queue) and polls for them; "Recompute
now" queues a recompute and shows the kept ones meanwhile, polling until the new ones are stored. With none kept,
whether the bank is big is read from at most KEPT_MIN_ROWS index entries of each kind (``looks_big``: the
period's decisions and verdicts by anyone, at least those of the team's reviewers)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.cache import cache
from django.utils import timezone

from accounts.models import Bank
from memories.items.models import ItemStatus, MemoryItem, MemoryItemVersion
from memories.review.agreement import BankAgreement, bank_agreement
from reasoningbank_site.kept import BankRoster
from reasoningbank_site.kept_queue import KeptFigures, kept_get, kept_store, queue_once, queued_clear
from trajectories.dashboard import report
from trajectories.dashboard.reviewers import DECISIONS, PERIODS, ReviewerStats, reviewer_stats
from trajectories.models import Judgment, JudgmentSource

VIEWED = BankRoster("reviewers-report")
"""Marked with (bank id, days, time zone): the figures beat keeps computed."""
TASK = "trajectories.reviewer_report"
"""The queued computation of one bank's figures over a period in a time zone (on the maintenance queue)."""
# Part of the key: a release that changes the kept fields changes it (see report.REPORT_SHAPE).
REVIEWERS_SHAPE = 1


@dataclass(frozen=True)
class ReviewerReport:
    computed_at: datetime
    days: int
    rows: list[ReviewerStats]
    agreement: BankAgreement
    big: bool  # kept, and kept computed by beat while viewed (see the module)

    @property
    def kept_minutes(self) -> int:
        return report.REPORT_CACHE_SECONDS // 60


def _zone() -> str:
    return str(timezone.get_current_timezone())


def _key(bank_id: int, days: int, zone: str) -> str:
    return f"reviewers:report:{REVIEWERS_SHAPE}:{bank_id}:{days}:{zone}"


def _big(bank: Bank, rows: list[ReviewerStats]) -> bool:
    """Whether the period's decisions and verdicts plus the bank's approved items reach KEPT_MIN_ROWS; reads at
    most that many approved items' index entries."""
    read = sum(r.decisions + r.edited + r.verdicts for r in rows)
    if read >= report.KEPT_MIN_ROWS:
        return True
    approved = MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED).order_by().values("pk")
    return read + approved[: report.KEPT_MIN_ROWS - read].count() >= report.KEPT_MIN_ROWS


def looks_big(bank: Bank, days: int) -> bool:
    """Whether the bank's figures over the last ``days`` may be big: its approved items, the period's decisions
    and edits and its human verdicts (by anyone) reach KEPT_MIN_ROWS, counting at most that many of each."""
    since = timezone.now() - timedelta(days=days)
    reads = (
        MemoryItem.objects.filter(bank=bank, status=ItemStatus.APPROVED),
        MemoryItemVersion.objects.filter(
            item__bank=bank, created_at__gte=since, author__isnull=False, action__in=[*DECISIONS, "edited"]
        ),
        Judgment.objects.filter(
            trajectory__bank=bank, source=JudgmentSource.HUMAN, author__isnull=False, created_at__gte=since
        ),
    )
    found = 0
    for rows in reads:
        found += rows.order_by().values("pk")[: report.KEPT_MIN_ROWS - found].count()
        if found >= report.KEPT_MIN_ROWS:
            return True
    return False


def _compute(bank: Bank, days: int, *, keep: bool = False) -> ReviewerReport:
    """Compute the figures; keep them when the bank is big or ``keep`` (the queued computation's)."""
    rows = reviewer_stats(bank=bank, days=days)
    figures = ReviewerReport(
        computed_at=timezone.now(),
        days=days,
        rows=rows,
        agreement=bank_agreement(bank=bank),
        big=_big(bank, rows),
    )
    if figures.big or keep:
        kept_store(_key(bank.pk, days, _zone()), figures, report.REPORT_CACHE_SECONDS)
    return figures


def reviewer_report(*, bank: Bank, days: int = PERIODS[0], fresh: bool = False) -> KeptFigures[ReviewerReport]:
    """The bank's reviewer figures over the last ``days`` in the current time zone: the kept ones,
    ``recomputing`` while a computation of them is queued (``fresh``: a big bank's queues one); with none kept,
    a big bank's are queued, never computed here, and a small bank's are computed now."""
    zone = _zone()
    key = _key(bank.pk, days, zone)
    figures, queued = kept_get(key)
    if figures is not None and not (fresh and not figures.big):
        if figures.big:
            VIEWED.mark((bank.pk, days, zone))
        if fresh:
            queue_once(key, TASK, bank.pk, days, zone)
        return KeptFigures(figures, recomputing=fresh or queued)
    if looks_big(bank, days):
        queue_once(key, TASK, bank.pk, days, zone)
        return KeptFigures(None, pending=True)
    figures = _compute(bank, days)
    if figures.big:
        VIEWED.mark((bank.pk, days, zone))
    return KeptFigures(figures)


def reviewer_compute(*, bank_id: int, days: int, zone: str) -> bool:
    """The queued computation (a worker's): compute the figures and keep them; returns whether it did."""
    bank = Bank.objects.filter(pk=bank_id, archived_at__isnull=True).first()
    try:
        if bank is None or days not in PERIODS:
            return False
        with timezone.override(zone):
            if _compute(bank, days, keep=True).big:
                VIEWED.mark((bank.pk, days, zone))
        return True
    finally:
        queued_clear(_key(bank_id, days, zone))


def reviewer_reports_refresh() -> int:
    """Recompute the kept reviewer figures viewed within WATCH_SECONDS that are REFRESH_AFTER_SECONDS old or no
    longer kept; returns how many. Run by beat with the dashboard's reports."""
    marked = [m for m in VIEWED.banks(within=report.WATCH_SECONDS) if isinstance(m, tuple) and m[1] in PERIODS]
    banks = Bank.objects.filter(pk__in={bank_id for bank_id, _, _ in marked}, archived_at__isnull=True).in_bulk()
    refreshed = 0
    for bank_id, days, zone in marked:
        if bank_id not in banks:
            continue
        figures = cache.get(_key(bank_id, days, zone))
        age = None if figures is None else (timezone.now() - figures.computed_at).total_seconds()
        if age is None or age >= report.REFRESH_AFTER_SECONDS:
            with timezone.override(zone):
                _compute(banks[bank_id], days)
            refreshed += 1
    return refreshed
