"""The reviewers page's figures (each reviewer's statistics over the period, reviewer_stats, and the bank's
inter-annotator agreement, bank_agreement) kept like the dashboard's report (trajectories.dashboard.report),
with its cache time, size and beat task.

Both grow with the bank: the period's item versions are joined to every item of the bank, and the review votes
are the bank's. A small bank's figures are computed on every view, so a new decision shows at once. A big bank's
(the period's decisions and verdicts plus the bank's approved items reach report.KEPT_MIN_ROWS) are kept per
period and time zone for REPORT_CACHE_SECONDS; the page states when they were computed and links to recomputing
them; a view marks them, and beat's ``dashboard_reports`` recomputes the marked ones before they expire."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.cache import cache
from django.utils import timezone

from accounts.models import Bank
from memories.items.models import ItemStatus, MemoryItem
from memories.review.agreement import BankAgreement, bank_agreement
from reasoningbank_site.kept import BankRoster
from trajectories.dashboard import report
from trajectories.dashboard.reviewers import PERIODS, ReviewerStats, reviewer_stats

VIEWED = BankRoster("reviewers-report")
"""Marked with (bank id, days, time zone): the figures beat keeps computed."""
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


def _compute(bank: Bank, days: int) -> ReviewerReport:
    rows = reviewer_stats(bank=bank, days=days)
    figures = ReviewerReport(
        computed_at=timezone.now(),
        days=days,
        rows=rows,
        agreement=bank_agreement(bank=bank),
        big=_big(bank, rows),
    )
    if figures.big:
        cache.set(_key(bank.pk, days, _zone()), figures, report.REPORT_CACHE_SECONDS)
    return figures


def reviewer_report(*, bank: Bank, days: int = PERIODS[0], fresh: bool = False) -> ReviewerReport:
    """The bank's reviewer figures over the last ``days`` in the current time zone: the kept ones, or (none kept,
    or ``fresh``) computed now, and kept if the bank is big."""
    figures = None if fresh else cache.get(_key(bank.pk, days, _zone()))
    if figures is None:
        figures = _compute(bank, days)
    if figures.big:
        VIEWED.mark((bank.pk, days, _zone()))
    return figures


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
