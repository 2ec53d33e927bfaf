"""The dashboard's report: the figures that grow with the bank's human labels and items (the judge/human
agreement, overall, per prompt version and per week; the distill outcomes per prompt version; the review
chart) computed together and kept in Django's cache (the shared database cache:
every web worker reads the same copy) for REPORT_CACHE_SECONDS. The page states when they were computed and
links to recomputing them at once; the counts beside them (pipeline, backlog, disagreements, activity) are
read on every view, most of them maintained counts (trajectories.dashboard.counts, memories.items.counts).

At a million trajectories these reads take about 0.3 s together (every human label and every item of the bank
is read), seconds at ten million. On a big bank (KEPT_MIN_ROWS approved items and human-labelled trajectories)
a view that reads the report marks the bank, and beat's ``reports_refresh`` (every minute) recomputes the
report of every bank marked within WATCH_SECONDS once it is REFRESH_AFTER_SECONDS old, before it expires: a
reviewer who keeps coming back finds it computed. A request never computes a big bank's report: when none is
kept (the first view after an idle hour, a cache clear) the view queues its computation for a worker
(``report_compute``, once however many readers: reasoningbank_site.kept_queue) and shows the rest of the page
with placeholders that poll until it is stored; "Recompute now" queues a recompute and shows the kept report
meanwhile (``recomputing``, while one is queued), beside a placeholder that polls until the new one is stored.
Whether a bank with nothing kept is big is read from its maintained approved count and at most KEPT_MIN_ROWS
index entries of its human labels (``looks_big``). A smaller bank's report is not kept: each view computes it
(tens of milliseconds), so a new label shows at once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from accounts.models import Bank
from reasoningbank_site.charts import Chart
from reasoningbank_site.kept import WATCH_SECONDS, BankRoster
from reasoningbank_site.kept_queue import KeptFigures, kept_get, kept_store, queue_once, queued_clear
from trajectories.dashboard.agreement import agreement_figure_rows, human_labels_up_to
from trajectories.dashboard.charts import dashboard_charts
from trajectories.dashboard.selectors import (
    CHART_WEEKS,
    Agreement,
    DistillOutcome,
    PeriodRate,
    VersionAgreement,
    agreement_keep,
    approved_count,
    dashboard_agreement,
    distill_outcomes_by_version,
    kept_agreement,
    local_today,
    version_agreements,
    weekly_rates,
    weeks_start,
)

# How long a computed report is kept (stated on the page); beat recomputes a watched one before it expires.
REPORT_CACHE_SECONDS = 300
KEPT_MIN_ROWS = 5000
"""Approved items plus human-labelled trajectories from which beat keeps a viewed bank's report computed."""
REFRESH_AFTER_SECONDS = REPORT_CACHE_SECONDS - 120
"""The age at which beat recomputes a watched report: a minute or two before it expires (beat runs each 60 s)."""
VIEWED = BankRoster("dashboard-report")
TASK = "trajectories.dashboard_report"
"""The queued computation of one bank's report (on the maintenance queue)."""


@dataclass(frozen=True)
class DashboardReport:
    computed_at: datetime
    agreement: Agreement
    agreement_by_version: list[VersionAgreement]
    distill_by_version: list[DistillOutcome]
    charts: list[Chart]
    approved: int  # the bank's approved items when it was computed (whether it is big)

    @property
    def kept_minutes(self) -> int:
        return REPORT_CACHE_SECONDS // 60

    @property
    def big(self) -> bool:
        """Whether beat keeps the bank's report computed while it is viewed (see the module)."""
        return self.approved + self.agreement.both >= KEPT_MIN_ROWS


# Part of the key: a release that changes DashboardReport's fields changes it, so no web worker unpickles a
# report kept by the release before.
REPORT_SHAPE = 1


def agreement_figures(*, bank: Bank) -> tuple[Agreement, list[VersionAgreement], list[PeriodRate]]:
    """The judge/human agreement overall, per prompt version and per week (CHART_WEEKS), equal to
    judge_human_agreement, judge_agreement_by_version and agreement_by_week, in one pass over the bank's
    human labels (trajectories.dashboard.agreement) instead of three."""
    today = local_today()
    rows = agreement_figure_rows(bank_id=bank.pk, tz=str(timezone.get_current_timezone()))
    versions: dict[str, list] = {}
    weeks: dict = {}
    both = agree = 0
    for version, week, first, last, first_id, *counts in rows:
        *by_version, latest, latest_agree = counts
        both, agree = both + latest, agree + latest_agree
        v = versions.setdefault(version, [first, last, first_id, [0] * len(by_version)])
        v[0], v[1], v[2] = min(v[0], first), max(v[1], last), min(v[2], first_id)
        v[3] = [have + more for have, more in zip(v[3], by_version, strict=True)]
        week_agree, week_n = weeks.get(week.date(), (0, 0))
        weeks[week.date()] = (week_agree + by_version[0], week_n + by_version[1])
    since = weeks_start(CHART_WEEKS, today).date()
    by_week = weekly_rates([(w, x, n) for w, (x, n) in weeks.items() if w >= since], weeks=CHART_WEEKS, today=today)
    ordered = sorted(versions.items(), key=lambda item: (item[1][0], item[1][2]))
    by_version = version_agreements([(version, v[0], v[1], *v[3]) for version, v in ordered])
    return Agreement(both=both, agree=agree), by_version, by_week


def _key(bank_id: int) -> str:
    return f"dashboard:report:{REPORT_SHAPE}:{bank_id}"


def _kept(bank: Bank, *, viewed: bool = True) -> tuple[DashboardReport | None, bool]:
    """The bank's report as last computed, if it is still kept, and whether a computation of it is queued;
    ``viewed``: a reader's, which marks a big bank for beat to keep its report computed."""
    report, queued = kept_get(_key(bank.pk))
    if viewed and report is not None and report.big:
        VIEWED.mark(bank.pk)
    return report, queued


def looks_big(bank: Bank, *, trajectories: int) -> bool:
    """Whether the bank's approved items plus its human judgments (at least the trajectories judged by both)
    reach KEPT_MIN_ROWS: whether its report may be big, read from the maintained approved count and at most
    KEPT_MIN_ROWS index entries. ``trajectories``: the bank's (the page's counts), a bound on the
    human-labelled ones that spares a bank with fewer the read of the human judgments."""
    found = approved_count(bank=bank)
    if found >= KEPT_MIN_ROWS:
        return True
    if found + trajectories < KEPT_MIN_ROWS:
        return False
    return found + human_labels_up_to(bank_id=bank.pk, most=KEPT_MIN_ROWS - found) >= KEPT_MIN_ROWS


def _compute(bank: Bank, *, keep: bool = False) -> DashboardReport:
    """Compute the report; keep it when the bank is big or ``keep`` (the queued computation's)."""
    agreement, by_version, by_week = agreement_figures(bank=bank)
    report = DashboardReport(
        computed_at=timezone.now(),
        agreement=agreement,
        agreement_by_version=by_version,
        distill_by_version=distill_outcomes_by_version(bank=bank),
        charts=dashboard_charts(bank=bank, agreement=by_week),
        approved=approved_count(bank=bank),
    )
    if report.big or keep:
        kept_store(_key(bank.pk), report, REPORT_CACHE_SECONDS)
    if not report.big:  # the refreshes (which read no report of a small bank) show this figure, not an older one
        agreement_keep(bank=bank, agreement=agreement)
    return report


def dashboard_report(*, bank: Bank, trajectories: int, fresh: bool = False) -> KeptFigures[DashboardReport]:
    """The bank's report for the page (and its figures fragment): the kept one, ``recomputing`` while a
    computation of it is queued (``fresh``: a big bank's queues one); with none kept, a big bank's is queued,
    never computed here, and a small bank's is computed now. ``trajectories``: the bank's, from the page's
    counts (see looks_big)."""
    report, queued = _kept(bank)
    if report is not None and not (fresh and not report.big):
        if fresh:
            queue_once(_key(bank.pk), TASK, bank.pk)
        return KeptFigures(report, recomputing=fresh or queued)
    if looks_big(bank, trajectories=trajectories):
        queue_once(_key(bank.pk), TASK, bank.pk)
        return KeptFigures(None, pending=True)
    return KeptFigures(_compute(bank))


def refresh_report(*, bank: Bank, trajectories: int) -> tuple[KeptFigures[DashboardReport], Agreement | None]:
    """What the 5-second refresh shows of the report, computing none, and its judge/human agreement figure: the
    kept report's (``recomputing`` while a recompute is queued); with none kept, a big bank's queued
    (``pending``: no figure), or a small bank's figure (the one its page kept a moment ago, else
    dashboard_agreement's)."""
    report, queued = _kept(bank)
    if report is not None:
        return KeptFigures(report, recomputing=queued), report.agreement
    if (agreement := kept_agreement(bank=bank)) is not None:
        return KeptFigures(None), agreement
    if looks_big(bank, trajectories=trajectories):
        queue_once(_key(bank.pk), TASK, bank.pk)
        return KeptFigures(None, pending=True), None
    return KeptFigures(None), dashboard_agreement(bank=bank)


def report_compute(*, bank_id: int) -> bool:
    """The queued computation (a worker's): compute the bank's report and keep it; returns whether it did."""
    bank = Bank.objects.filter(pk=bank_id, archived_at__isnull=True).first()
    try:
        if bank is None:
            return False
        if _compute(bank, keep=True).big:
            VIEWED.mark(bank.pk)
        return True
    finally:
        queued_clear(_key(bank_id))


def reports_refresh() -> int:
    """Recompute the reports of the banks viewed within WATCH_SECONDS that are REFRESH_AFTER_SECONDS old or
    no longer kept; returns how many. Run by beat."""
    refreshed = 0
    for bank in Bank.objects.filter(pk__in=VIEWED.banks(within=WATCH_SECONDS), archived_at__isnull=True):
        report, _queued = _kept(bank, viewed=False)
        if report is None or (timezone.now() - report.computed_at).total_seconds() >= REFRESH_AFTER_SECONDS:
            _compute(bank)
            refreshed += 1
    return refreshed
