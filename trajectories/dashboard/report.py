"""The dashboard's report: the figures that grow with the bank's human labels and items (the judge/human
agreement, overall, per prompt version and per week; the distill outcomes per prompt version; the review
chart; the count of approved items) computed together and kept in Django's cache (the shared database cache: every web worker reads the
same copy) for REPORT_CACHE_SECONDS. The page states when they were computed and links to recomputing them
at once; the counts beside them (pipeline, backlog, disagreements, activity) are read on every view.

At a million trajectories these reads take about 0.4 s together (every human label and every item of the bank
is read), once per bank per REPORT_CACHE_SECONDS instead of on every view and every open tab."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.cache import cache
from django.utils import timezone

from accounts.models import Bank
from reasoningbank_site.charts import Chart
from trajectories.dashboard.charts import dashboard_charts
from trajectories.dashboard.selectors import (
    Agreement,
    DistillOutcome,
    VersionAgreement,
    approved_count,
    distill_outcomes_by_version,
    judge_agreement_by_version,
    judge_human_agreement,
)

# How long a computed report is shown before the next view computes it again (stated on the page).
REPORT_CACHE_SECONDS = 300


@dataclass(frozen=True)
class DashboardReport:
    computed_at: datetime
    agreement: Agreement
    agreement_by_version: list[VersionAgreement]
    distill_by_version: list[DistillOutcome]
    charts: list[Chart]
    approved: int  # the bank's approved items (the review backlog panel)

    @property
    def kept_minutes(self) -> int:
        return REPORT_CACHE_SECONDS // 60


# Part of the key: a release that changes DashboardReport's fields changes it, so no web worker unpickles a
# report kept by the release before.
REPORT_SHAPE = 1


def _key(bank: Bank) -> str:
    return f"dashboard:report:{REPORT_SHAPE}:{bank.pk}"


def kept_report(*, bank: Bank) -> DashboardReport | None:
    """The bank's report as last computed, if it is still kept."""
    return cache.get(_key(bank))


def dashboard_report(*, bank: Bank, fresh: bool = False) -> DashboardReport:
    """The bank's report: the kept one, or (none kept, or ``fresh``) computed now and kept."""
    report = None if fresh else kept_report(bank=bank)
    if report is None:
        report = DashboardReport(
            computed_at=timezone.now(),
            agreement=judge_human_agreement(bank=bank),
            agreement_by_version=judge_agreement_by_version(bank=bank),
            distill_by_version=distill_outcomes_by_version(bank=bank),
            charts=dashboard_charts(bank=bank),
            approved=approved_count(bank=bank),
        )
        cache.set(_key(bank), report, REPORT_CACHE_SECONDS)
    return report
