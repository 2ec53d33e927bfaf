"""Reads behind a bank's dashboard: trajectories per status, judge/human
agreement, recent activity and the review backlog. Counts are grouped in one
query each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, Sum
from django.db.models.functions import Coalesce, TruncWeek
from django.utils import timezone

from accounts.models import Bank
from memories.items.counts import item_counts
from memories.items.models import ItemStatus, MemoryItem, MemoryItemVersion
from reasoningbank_site.rates import CaseRate
from trajectories.dashboard.activity import ACTOR_FIELDS, item_action_words
from trajectories.dashboard.agreement import agreement_by_version_rows, agreement_by_week_rows, agreement_counts
from trajectories.dashboard.models import TrajectoryCount
from trajectories.impact.statistics import wilson_interval
from trajectories.models import Judgment, Label, Status, Trajectory


def status_counts(*, bank: Bank) -> list[tuple[str, str, int]]:
    """(status, label, count) for every pipeline status, in pipeline order, from
    the maintained counts (trajectories.dashboard.counts), not the bank's rows."""
    counts = dict(TrajectoryCount.objects.filter(bank=bank).values_list("status").annotate(n=Sum("n")).order_by())
    return [(value, label, counts.get(value, 0)) for value, label in Status.choices]


@dataclass
class Agreement:
    both: int  # trajectories with an llm and a human judgment
    agree: int

    @property
    def fraction(self) -> float | None:
        return self.agree / self.both if self.both else None

    @property
    def rate(self) -> CaseRate:
        return CaseRate(self.agree, self.both)


# How long the 5-second refresh keeps the agreement figure it read when no report is kept
# (trajectories.dashboard.report, whose figure it shows otherwise).
AGREEMENT_CACHE_SECONDS = 60


def judge_human_agreement(*, bank: Bank) -> Agreement:
    """Among trajectories judged by both the LLM and a human, how many have
    the same label in the latest LLM and the latest human judgment (read
    from the human judgments: trajectories.dashboard.agreement)."""
    both, agree = agreement_counts(bank_id=bank.pk)
    return Agreement(both=both, agree=agree)


def dashboard_agreement(*, bank: Bank) -> Agreement:
    """The judge/human agreement for the 5-second refresh when no report is kept: read once and kept in the
    cache for AGREEMENT_CACHE_SECONDS, so the refreshes of every open tab read the bank's human judgments at
    most once a minute."""
    kept = kept_agreement(bank=bank)
    if kept is not None:
        return kept
    agreement = judge_human_agreement(bank=bank)
    agreement_keep(bank=bank, agreement=agreement)
    return agreement


def kept_agreement(*, bank: Bank) -> Agreement | None:
    """The agreement figure dashboard_agreement keeps, if it still is."""
    kept = cache.get(f"dashboard:agreement:{bank.pk}")
    return None if kept is None else Agreement(*kept)


def agreement_keep(*, bank: Bank, agreement: Agreement) -> None:
    """Keep this agreement figure for the refreshes (dashboard_agreement): the page that computed it keeps it,
    so the refreshes after it show the page's figure, not an older one."""
    cache.set(f"dashboard:agreement:{bank.pk}", (agreement.both, agreement.agree), AGREEMENT_CACHE_SECONDS)


@dataclass(frozen=True)
class Rate(CaseRate):
    """``x`` of ``n``, with its Wilson 95% interval (None when n is 0); stated as a rate from MIN_CASES up."""

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.x, self.n)

    @property
    def text(self) -> str:
        """ "62% [48–75%] n=40": the rate, its interval and always its n; below MIN_CASES the counts only."""
        if not self.enough:
            return super().text
        low, high = self.interval
        return f"{self.value:.0%} [{round(low * 100)}–{round(high * 100)}%] n={self.n}"


@dataclass
class VersionAgreement:
    version: str
    first_at: object
    last_at: object
    accuracy: Rate  # the LLM's label equals the reviewer's latest
    false_success: Rate  # LLM said success, of the reviewer's failures
    false_failure: Rate  # LLM said failure, of the reviewer's successes


def judge_agreement_by_version(*, bank: Bank) -> list[VersionAgreement]:
    """For every judge prompt version (``Judgment.prompt_version``, e.g.
    ``judge/v1`` or ``judge@bank-3-v2+fs``): how its LLM judgments compare
    with the reviewer's latest verdict on the same trajectories, in the order
    the versions were first used — the judge's agreement over time."""
    return version_agreements(agreement_by_version_rows(bank_id=bank.pk))


def version_agreements(rows) -> list[VersionAgreement]:
    """VersionAgreement per version from rows of (version, first at, last at, *counts) in the order first used."""
    tallies: dict[str, list] = {}
    for version, first, last, *counts in rows:
        t = tallies.setdefault(version or "(unrecorded)", [first, last, 0, 0, 0, 0, 0, 0])
        t[1] = max(t[1], last)
        t[2:] = [have + more for have, more in zip(t[2:], counts, strict=True)]
    return [
        VersionAgreement(v, t[0], t[1], Rate(t[2], t[3]), Rate(t[4], t[5]), Rate(t[6], t[7]))
        for v, t in tallies.items()
    ]


@dataclass
class DistillOutcome:
    version: str
    items: int
    approved_unchanged: int
    approved_edited: int
    rejected: int
    pending: int

    @property
    def decided(self) -> int:
        return self.approved_unchanged + self.approved_edited + self.rejected

    @property
    def share_unchanged(self) -> Rate:
        return Rate(self.approved_unchanged, self.decided)

    @property
    def share_edited(self) -> Rate:
        return Rate(self.approved_edited, self.decided)

    @property
    def share_rejected(self) -> Rate:
        return Rate(self.rejected, self.decided)


def distill_outcomes_by_version(*, bank: Bank) -> list[DistillOutcome]:
    """For every distill prompt version that proposed items: how reviewers
    decided them — approved unchanged, approved after an edit, rejected, or
    not decided yet (proposed; superseded items are left out: a relabel, not
    a reviewer, retired them). Shares are of the decided items."""
    edited = Exists(MemoryItemVersion.objects.filter(item=OuterRef("pk"), action="edited"))
    rows = (
        MemoryItem.objects.filter(bank=bank)
        .exclude(prompt_version="")
        .exclude(status=ItemStatus.SUPERSEDED)
        .annotate(edited=edited)
        .values("prompt_version", "status", "edited")
        .annotate(n=Count("id"))
        .order_by()
    )
    out: dict[str, DistillOutcome] = {}
    for row in rows:
        o = out.setdefault(row["prompt_version"], DistillOutcome(row["prompt_version"], 0, 0, 0, 0, 0))
        o.items += row["n"]
        if row["status"] in (ItemStatus.APPROVED, ItemStatus.ARCHIVED):
            if row["edited"]:
                o.approved_edited += row["n"]
            else:
                o.approved_unchanged += row["n"]
        elif row["status"] == ItemStatus.REJECTED:
            o.rejected += row["n"]
        else:
            o.pending += row["n"]
    return sorted(out.values(), key=lambda o: o.version)


@dataclass
class Activity:
    when: object
    who: str
    what: str
    title: str
    kind: str  # "item" | "judgment" | "trajectory"
    public_id: str


def recent_activity(*, bank: Bank, limit: int = 12) -> list[Activity]:
    """The latest item actions, human/LLM judgments and arrivals, merged by time."""
    events: list[Activity] = []
    for v in (
        MemoryItemVersion.objects.filter(item__bank=bank)
        .select_related("author", "actor_token", "item")
        .only("action", "created_at", "item__title", "item__public_id", *ACTOR_FIELDS)
        .order_by("-created_at", "-id")[:limit]
    ):
        events.append(
            Activity(
                v.created_at,
                v.actor_label,
                item_action_words(v.action),
                v.item.title,
                "item",
                str(v.item.public_id),
            )
        )
    for j in (
        Judgment.objects.filter(trajectory__bank=bank)
        .select_related("author", "trajectory")
        .only("source", "label", "created_at", "author__username", "trajectory__task", "trajectory__public_id")
        .order_by("-created_at", "-id")[:limit]
    ):
        who = j.author.get_username() if j.author else j.get_source_display()
        events.append(
            Activity(
                j.created_at, who, f"judged {j.label}", j.trajectory.task[:120], "judgment", str(j.trajectory.public_id)
            )
        )
    for t in (
        Trajectory.objects.filter(bank=bank)
        .only("task", "agent", "created_at", "public_id")
        .order_by("-created_at", "-id")[:limit]
    ):
        events.append(
            Activity(
                t.created_at, t.agent or "agent", "sent a trajectory", t.task[:120], "trajectory", str(t.public_id)
            )
        )
    events.sort(key=lambda e: e.when, reverse=True)
    return events[:limit]


def review_backlog(*, bank: Bank) -> dict[str, int]:
    """Proposed items waiting for review, approved items flagged for another look, and the approved items, from
    the bank's maintained item counts (memories.items.counts). One query of a few rows."""
    counts = item_counts(bank_id=bank.pk)
    proposed, approved = ItemStatus.PROPOSED, ItemStatus.APPROVED
    return {
        "proposed": counts.get((proposed, False), 0) + counts.get((proposed, True), 0),
        "flagged": counts.get((approved, True), 0),
        "approved": counts.get((approved, False), 0) + counts.get((approved, True), 0),
    }


def approved_count(*, bank: Bank) -> int:
    """The bank's approved items (the maintained counts)."""
    return review_backlog(bank=bank)["approved"]


# --- Charts: one point per day or week, grouped in SQL ----------------------------------

CHART_DAYS = 30
CHART_WEEKS = 12


@dataclass(frozen=True)
class ReviewDay:
    day: date
    backlog: int  # proposed items waiting at the end of the day
    approved: int  # approvals that day


@dataclass(frozen=True)
class PeriodRate(CaseRate):
    """``x`` of ``n`` cases in the period starting ``start``; no value below MIN_CASES."""

    start: date | None = None


def local_today() -> date:
    return timezone.localdate()


def _week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())  # Monday, as PostgreSQL's date_trunc('week')


# Per day: how many items entered the queue (a version whose status became
# proposed) minus how many left it, and the approvals (moves into approved;
# clearing a review flag writes an "approved" version too but is not one). Only the window's versions are read
# (the index memoryitemversion_created), each with its item's version before it by the (item, number) index, once (a LATERAL join):
# the work grows with the window's changes, not with the bank's history.
_REVIEW_MOVES_SQL = """
WITH moves AS (
    SELECT v.created_at, v.status, p.status AS previous
    FROM {versions} v JOIN {items} i ON i.id = v.item_id
    LEFT JOIN LATERAL (
        SELECT p.status FROM {versions} p WHERE p.item_id = v.item_id AND p.number < v.number
        ORDER BY p.number DESC LIMIT 1
    ) p ON true
    WHERE i.bank_id = %s AND v.created_at >= %s
)
SELECT (created_at AT TIME ZONE %s)::date AS day,
       SUM(CASE WHEN status = %s AND previous IS DISTINCT FROM %s THEN 1
                WHEN status <> %s AND previous = %s THEN -1 ELSE 0 END) AS delta,
       COUNT(*) FILTER (WHERE status = %s AND previous IS DISTINCT FROM %s) AS approved
FROM moves
GROUP BY 1
"""


def review_by_day(*, bank: Bank, days: int = CHART_DAYS, today: date | None = None) -> list[ReviewDay]:
    """The review queue over the last ``days`` days (oldest first): the
    backlog at each day's end and that day's approvals. The backlog is
    anchored on today's count of proposed items and walked back through the
    items' version history (every status move writes a version). Two queries
    (today's count is the maintained one)."""
    today = today or local_today()
    first = today - timedelta(days=days - 1)
    tz = timezone.get_current_timezone()
    start = timezone.make_aware(datetime.combine(first, time.min), tz)
    proposed = ItemStatus.PROPOSED
    sql = _REVIEW_MOVES_SQL.format(versions=MemoryItemVersion._meta.db_table, items=MemoryItem._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(sql, [bank.pk, start, str(tz), *[proposed] * 4, ItemStatus.APPROVED, ItemStatus.APPROVED])
        moves = {day: (delta, approved) for day, delta, approved in cursor.fetchall()}
    backlog = review_backlog(bank=bank)["proposed"]
    out = []
    for offset in range(days):
        day = today - timedelta(days=offset)
        delta, approved = moves.get(day, (0, 0))
        out.append(ReviewDay(day, max(backlog, 0), approved))
        backlog -= delta  # the backlog at the end of the day before
    return out[::-1]


def weekly_rates(rows, *, weeks: int, today: date) -> list[PeriodRate]:
    """One PeriodRate per week (oldest first) from rows of (week start, x, n); missing weeks count 0."""
    found = {(w.date() if hasattr(w, "date") else w): (x, n) for w, x, n in rows}
    last = _week_start(today)
    out = []
    for back in range(weeks - 1, -1, -1):
        start = last - timedelta(weeks=back)
        x, n = found.get(start, (0, 0))
        out.append(PeriodRate(x, n, start))
    return out


def weeks_start(weeks: int, today: date) -> datetime:
    first = _week_start(today) - timedelta(weeks=weeks - 1)
    return timezone.make_aware(datetime.combine(first, time.min))


def success_by_week(*, bank: Bank, weeks: int = CHART_WEEKS, today: date | None = None) -> list[PeriodRate]:
    """Per week of arrival (oldest first): trajectories whose effective
    verdict is success, of those with a verdict. One query, of the maintained
    counts per day (trajectories.dashboard.counts; days are UTC, as TIME_ZONE)."""
    today = today or local_today()
    rows = (
        TrajectoryCount.objects.filter(bank=bank, day__gte=weeks_start(weeks, today).date())
        .exclude(verdict="")
        .annotate(week=TruncWeek("day"))
        .values("week")
        .annotate(x=Coalesce(Sum("n", filter=Q(verdict=Label.SUCCESS)), 0), n=Sum("n"))
        .order_by()
        .values_list("week", "x", "n")
    )
    return weekly_rates(rows, weeks=weeks, today=today)


def agreement_by_week(*, bank: Bank, weeks: int = CHART_WEEKS, today: date | None = None) -> list[PeriodRate]:
    """Per week of the LLM's judgment (oldest first): LLM judgments that
    match the reviewer's latest verdict on the same trajectory, of those with
    a reviewer verdict (as the per-version table counts them). One query."""
    today = today or local_today()
    tz = str(timezone.get_current_timezone())
    rows = agreement_by_week_rows(bank_id=bank.pk, since=weeks_start(weeks, today), tz=tz)
    return weekly_rates(rows, weeks=weeks, today=today)
