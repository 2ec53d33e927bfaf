"""Does this bank help its agents? Read-only selectors behind the Impact
page and ``GET /api/v1/impact``; the statistics themselves are plain
functions in ``trajectories.lift_stats`` (checked on simulated banks by
``trajectories.lift_simulation``).

What is measured: retrievals are split by ``memories.services.retrieval_perform``
into a treatment arm (items served) and a holdout arm (nothing served; the
event still records what *would* have been served). Agents that send
``retrieval_id`` with their trajectory link an outcome to its arm. Success is
the trajectory's effective verdict (latest human, else trusted agent signal,
else LLM judge); unjudged trajectories and trajectories without a retrieval
are left out.

The comparison:
- the unit is the retrieval: its outcome is the share of its judged
  trajectories that succeeded, so a MaTTS group or retries count once;
- only triggered retrievals — that served, or would have served, at least
  one item — are compared (a retrieval that found nothing cannot be helped);
- only one holdout-fraction period, the latest with a holdout: every
  retrieval records the fraction it was assigned with, and retrievals of
  different periods are never compared;
- the verdict follows an always-valid 95% confidence sequence, so looking
  every day is safe; Newcombe's fixed-horizon interval is shown as a
  secondary, one-look number;
- guardrails (sample-ratio mismatch, differential reporting) withhold it.

A time window filters by when the *retrieval* happened (whole UTC days), so
an outcome counts in the window of the retrieval that fed it.

Per item: with per-item randomisation (bank.item_holdout_fraction), an
item served vs the same item left out on its own among treatment
retrievals; otherwise vs the holdout arm (ItemComparison).

Speed: nothing here reads the trajectories. The sums come from
memories.RetrievalTally (kept by memories.services.tallies from the one
verdict write path), a few rows per day and item."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from accounts.models import Bank
from memories.models import Arm, ItemSide, MemoryItem, RetrievalEvent, RetrievalTally
from trajectories.lift_stats import (
    MIN_ITEM_UNITS,
    MIN_UNITS,
    MIXTURE_SD,
    ArmSums,
    Assessment,
    Decision,
    Guardrail,
    assess,
    item_effects,
    newcombe_difference,  # noqa: F401 (re-exported: the maths moved to lift_stats)
    wilson_interval,  # noqa: F401
)
from trajectories.models import Label

MIN_PER_ARM = MIN_UNITS
"""Judged retrievals each arm needs before a verdict other than "not enough data"."""
MIN_ITEM_JUDGED = MIN_ITEM_UNITS
"""Judged retrievals an item needs on each side (served, withheld) before it is tested."""
FALLBACK_BASELINE = 0.5
"""``item_baseline`` of the API while the holdout has fewer than MIN_PER_ARM judged retrievals."""

METHOD = (
    "Always-valid 95% confidence sequence for treatment − holdout (normal mixture, the mixture SPRT of "
    f"Johari et al. 2017, τ = {MIXTURE_SD:g}), one outcome per retrieval; secondary: Newcombe's hybrid score "
    "95% interval (method 10 of Newcombe 1998), valid for one look only."
)
JUDGED = (Label.SUCCESS, Label.FAILURE)


# --- the bank report ----------------------------------------------------------------------------


def _percent(fraction: float | None) -> float | None:
    """A fraction as percent (or percentage points), None staying None: what the templates show."""
    return None if fraction is None else fraction * 100


@dataclass
class ArmStats(ArmSums):
    """One arm of the analysed period, with template-friendly views.
    ``reported``/``judged``/``successes`` count trajectories; ``units`` counts
    judged retrievals, and ``rate`` is per retrieval."""

    arm: str = ""

    @property
    def reported(self) -> int:
        return self.trajectories

    @property
    def failures(self) -> int:
        return self.judged - self.successes

    @property
    def low(self) -> float | None:
        return self.interval[0] if self.units else None

    @property
    def high(self) -> float | None:
        return self.interval[1] if self.units else None

    @property
    def rate_pct(self) -> float | None:
        return _percent(self.rate)

    @property
    def low_pct(self) -> float | None:
        return _percent(self.low)

    @property
    def high_pct(self) -> float | None:
        return _percent(self.high)

    @property
    def needed(self) -> int:
        """How many more judged retrievals this arm needs for a verdict."""
        return max(0, MIN_PER_ARM - self.units)

    @property
    def report_rate(self) -> float | None:
        """Share of triggered retrievals that came back judged (the reporting guardrail)."""
        return self.units / self.triggered if self.triggered else None

    @property
    def report_pct(self) -> float | None:
        return _percent(self.report_rate)


@dataclass
class Difference:
    """treatment − holdout success rate, as fractions (0.4 = 40 points):
    ``low``/``high`` Newcombe's one-look interval, ``cs_low``/``cs_high`` the
    always-valid confidence sequence the verdict follows."""

    estimate: float
    low: float
    high: float
    cs_low: float
    cs_high: float

    @property
    def estimate_pts(self) -> float:
        return self.estimate * 100

    @property
    def low_pts(self) -> float:
        return self.low * 100

    @property
    def high_pts(self) -> float:
        return self.high * 100

    @property
    def cs_low_pts(self) -> float:
        return self.cs_low * 100

    @property
    def cs_high_pts(self) -> float:
        return self.cs_high * 100


class Verdict:
    NO_HOLDOUT = "no_holdout"
    NOT_ENOUGH_DATA = Decision.NOT_ENOUGH_DATA
    WITHHELD = Decision.WITHHELD
    HELPS = Decision.HELPS
    HURTS = Decision.HURTS
    NO_DIFFERENCE = Decision.NO_DIFFERENCE


@dataclass
class Period:
    """The holdout-fraction period analysed: retrievals assigned with
    ``fraction`` (None: recorded before fractions were), created after
    ``after`` (None: from the first). ``excluded`` retrievals of the window
    belong to other periods and are not compared."""

    fraction: float | None = None
    after: datetime | None = None
    excluded: int = 0
    first_day: date | None = None  # the first UTC day summed (the day of ``after``, or the next)

    @property
    def fraction_pct(self) -> float | None:
        return _percent(self.fraction)


@dataclass
class LiftReport:
    since: datetime | None
    until: datetime | None
    holdout_fraction: float
    treatment: ArmStats
    holdout: ArmStats
    difference: Difference | None
    verdict: str
    verdict_text: str
    period: Period = field(default_factory=Period)
    assessment: Assessment = field(default_factory=Assessment)
    method: str = METHOD
    min_per_arm: int = MIN_PER_ARM
    item_comparison: str = "holdout_arm"  # set by item_outcomes (ItemComparison)

    @property
    def holdout_configured(self) -> bool:
        """False when no period has a holdout (fraction 0 throughout and no
        holdout retrieval in the window): then there is nothing to compare."""
        return self.verdict != Verdict.NO_HOLDOUT

    @property
    def baseline(self) -> float:
        """The holdout's success rate once it has MIN_PER_ARM judged
        retrievals, else FALLBACK_BASELINE (the API's ``item_baseline``; items
        are no longer flagged against it)."""
        if self.holdout.units >= MIN_PER_ARM:
            return self.holdout.rate
        return FALLBACK_BASELINE

    @property
    def guardrails(self) -> list[Guardrail]:
        return self.assessment.guardrails

    @property
    def mde_pts(self) -> float | None:
        return _percent(self.assessment.mde)

    @property
    def more_needed_5(self) -> int | None:
        return self.assessment.more_needed.get(5)

    @property
    def more_needed_10(self) -> int | None:
        return self.assessment.more_needed.get(10)

    @property
    def steps_difference(self) -> float | None:
        t, h = self.treatment.mean_steps, self.holdout.mean_steps
        return None if t is None or h is None else t - h


def window_start(days: int | None, now: datetime | None = None) -> datetime | None:
    """The start of a window of ``days`` back from now, at midnight UTC: the
    report sums whole UTC days (None: all time)."""
    if not days:
        return None
    start = (now or timezone.now()) - timedelta(days=days)
    return datetime.combine(start.astimezone(UTC).date(), time.min, tzinfo=UTC)


def _days(since: datetime | None, until: datetime | None) -> tuple[date | None, date | None]:
    """The window as whole UTC days: [first, last) (a partial day at ``since``
    counts whole; one at ``until`` does not)."""
    return (
        since.astimezone(UTC).date() if since is not None else None,
        until.astimezone(UTC).date() if until is not None else None,
    )


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start, start + timedelta(days=1)


def _points(value: float) -> str:
    return f"{value * 100:+.1f}"


_GUARDRAIL_REASONS = {
    "sample_ratio": "the arms' shares of retrievals do not match the holdout fraction, so assignment or logging "
    "is broken somewhere",
    "reporting": "the two arms report back at different rates, so the outcomes that came back are not comparable",
}


def _verdict_text(report: LiftReport) -> str:
    treatment, holdout, difference, found = report.treatment, report.holdout, report.difference, report.assessment
    if report.verdict == Verdict.NO_HOLDOUT:
        return (
            "No holdout is configured, so there is nothing to compare with: the numbers below are the "
            "treatment arm alone, not a measurement of lift. Set a holdout fraction (e.g. 0.1) in the bank settings."
        )
    if report.verdict == Verdict.NOT_ENOUGH_DATA:
        needs = []
        for stats, name in (
            (treatment, "the treatment arm (memories served)"),
            (holdout, "the holdout arm (memories withheld)"),
        ):
            if stats.needed:
                needs.append(f"{name} needs {stats.needed} more")
        return (
            f"Not enough data yet: each arm needs at least {MIN_PER_ARM} judged retrievals; "
            + " and ".join(needs)
            + "."
        )
    if report.verdict == Verdict.WITHHELD:
        reasons = "; and ".join(_GUARDRAIL_REASONS[g.name] for g in found.failed_guardrails)
        return f"No verdict: {reasons}. Fix the cause before trusting any difference (see the checks below)."
    span = f"(always-valid 95% interval {_points(difference.cs_low)} to {_points(difference.cs_high)} points)"
    if report.verdict == Verdict.HELPS:
        return (
            f"The bank helps: agents that were served memories succeeded {difference.estimate * 100:.1f} points "
            f"more often than agents in the holdout {span}."
        )
    if report.verdict == Verdict.HURTS:
        return (
            f"The bank hurts: agents that were served memories succeeded {-difference.estimate * 100:.1f} points "
            f"less often than agents in the holdout {span}."
        )
    return (
        f"No measurable difference yet: served minus withheld is {_points(difference.estimate)} points {span}, "
        "an interval that includes zero."
    )


def _tallies(bank: Bank, first: date | None, last: date | None):
    tallies = RetrievalTally.objects.filter(bank=bank)
    if first is not None:
        tallies = tallies.filter(day__gte=first)
    if last is not None:
        tallies = tallies.filter(day__lt=last)
    return tallies


def _same_fraction(fraction: float | None) -> Q:
    return Q(holdout_fraction__isnull=True) if fraction is None else Q(holdout_fraction=fraction)


def _period(bank: Bank, first: date | None, last: date | None) -> Period | None:
    """The latest holdout-fraction period of the window with a holdout (or
    with fractions not recorded); None when every retrieval of the window was
    assigned with fraction 0. The days come from the tallies and the exact
    moments from that day's retrievals, so every query reads at most a day of
    retrievals (the index on bank, created_at). A period starts at ``after``,
    the last change; when that day also had retrievals of an earlier period
    with the same fraction (A → B → A in one day), it starts at the next
    midnight instead, since a day's tallies cannot be split."""
    arm_rows = _tallies(bank, first, last).filter(item__isnull=True, retrievals__gt=0)
    holdout_on = Q(holdout_fraction__isnull=True) | Q(holdout_fraction__gt=0)
    latest_day = arm_rows.filter(holdout_on).order_by("-day").values_list("day", flat=True).first()
    if latest_day is None:
        return None
    start, end = _day_bounds(latest_day)
    events = RetrievalEvent.objects.filter(bank=bank)
    latest = (
        events.filter(holdout_on, created_at__gte=start, created_at__lt=end)
        .order_by("-created_at", "-id")
        .values_list("holdout_fraction", "created_at")
        .first()
    )
    if latest is None:  # tallies without their retrievals (deleted): nothing to compare
        return None
    fraction, at = latest
    other_days = (
        arm_rows.filter(day__lte=latest_day)
        .exclude(_same_fraction(fraction))
        .order_by("-day")
        .values_list("day", flat=True)
        .distinct()[:2]
    )
    boundary = None
    for day in other_days:  # the latest day may hold other fractions only after `at`: then the day before
        day_start, day_end = _day_bounds(day)
        boundary = (
            events.filter(created_at__gte=day_start, created_at__lt=min(day_end, at))
            .exclude(_same_fraction(fraction))
            .order_by("-created_at")
            .values_list("created_at", flat=True)
            .first()
        )
        if boundary is not None:
            break
    period = Period(fraction=fraction, after=boundary)
    if boundary is not None:
        day_start, day_end = _day_bounds(boundary.astimezone(UTC).date())
        period.first_day = day_start.date()
        if events.filter(_same_fraction(fraction), created_at__gte=day_start, created_at__lt=boundary).exists():
            period.first_day, period.after = day_end.date(), day_end
    return period


def _in_period(period: Period | None, params: dict) -> str:
    """SQL: whether a tally row belongs to ``period`` (fills ``params``)."""
    if period is None:
        return "true"
    condition = "holdout_fraction IS NULL" if period.fraction is None else "holdout_fraction = %(fraction)s"
    params["fraction"] = period.fraction
    if period.first_day is not None:
        condition += " AND day >= %(first_day)s"
        params["first_day"] = period.first_day
    return condition


def _window_sql(first: date | None, last: date | None, params: dict) -> str:
    where = "bank_id = %(bank)s"
    if first is not None:
        where += " AND day >= %(first)s"
        params["first"] = first
    if last is not None:
        where += " AND day < %(last)s"
        params["last"] = last
    return where


# Per arm: the window's tallies split into the period's and the others
# (whose retrievals are only counted as excluded).
_ARMS_SQL = """
SELECT arm, ({in_period}) AS in_period,
       SUM(retrievals), SUM(triggered), SUM(units), SUM(y_sum), SUM(y_sq_sum),
       SUM(trajectories), SUM(judged), SUM(successes), SUM(steps)
FROM {tally}
WHERE {window} AND item IS NULL
GROUP BY 1, 2
"""


def _arm_stats(bank: Bank, first: date | None, last: date | None, period: Period | None) -> tuple[dict, int]:
    """The period's arms, and how many of the window's retrievals are outside it."""
    params = {"bank": bank.pk}
    sql = _ARMS_SQL.format(
        tally=RetrievalTally._meta.db_table,
        window=_window_sql(first, last, params),
        in_period=_in_period(period, params),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    arms = {Arm.TREATMENT.value: ArmStats(arm=Arm.TREATMENT.value), Arm.HOLDOUT.value: ArmStats(arm=Arm.HOLDOUT.value)}
    excluded = 0
    for arm, in_period, retrievals, triggered, units, y_sum, y_sq_sum, trajectories, judged, successes, steps in rows:
        if not in_period:
            excluded += retrievals
        elif arm in arms:
            stats = arms[arm]
            stats.retrievals, stats.triggered, stats.units = retrievals, triggered, units
            stats.y_sum, stats.y_sq_sum = float(y_sum), max(0.0, float(y_sq_sum))
            stats.trajectories, stats.judged, stats.successes = trajectories, judged, successes
            stats.steps_sum, stats.steps_n = int(steps), judged
    return arms, excluded


def bank_lift(*, bank: Bank, since: datetime | None = None, until: datetime | None = None) -> LiftReport:
    """Per arm of the latest holdout-fraction period: retrievals, triggered
    retrievals, trajectories reported back, judged, successes, the per-retrieval
    success rate with a Wilson interval and the mean step count; the
    difference treatment − holdout with its always-valid confidence sequence
    (the verdict) and Newcombe's one-look interval; guardrails; power. The
    window is whole UTC days from ``since`` (see window_start) to ``until``.
    Reads the maintained tallies (RetrievalTally), not the trajectories:
    at most seven small queries whatever the data size — the period (up to six,
    each within one day of retrievals) and the arms' aggregate."""
    first, last = _days(since, until)
    period = _period(bank, first, last)
    arms, excluded = _arm_stats(bank, first, last, period)
    treatment, holdout = arms[Arm.TREATMENT.value], arms[Arm.HOLDOUT.value]
    if period is not None:
        period.excluded = excluded
    else:
        period = Period(fraction=0.0)
    configured = (period.fraction or 0) > 0 or holdout.retrievals > 0 or bank.holdout_fraction > 0
    if configured:
        assessment = assess(treatment, holdout, period.fraction)
        verdict = assessment.decision
    else:
        assessment, verdict = Assessment(), Verdict.NO_HOLDOUT
    difference = None
    if assessment.estimate is not None:
        difference = Difference(
            assessment.estimate, assessment.fixed_low, assessment.fixed_high, assessment.cs_low, assessment.cs_high
        )
    report = LiftReport(
        since=since,
        until=until,
        holdout_fraction=bank.holdout_fraction,
        treatment=treatment,
        holdout=holdout,
        difference=difference,
        verdict=verdict,
        verdict_text="",
        period=period,
        assessment=assessment,
    )
    report.verdict_text = _verdict_text(report)
    return report


# --- per item -------------------------------------------------------------------------------------


@dataclass
class ItemOutcome:
    public_id: uuid.UUID
    item: MemoryItem | None  # None: the item no longer exists
    served_judged: int  # judged trajectories whose retrieval served the item
    served_successes: int
    withheld_judged: int  # ... whose retrieval would have served it but was held out
    withheld_successes: int
    served_units: int = 0  # the same as retrievals (one outcome each)
    served_y: float = 0.0
    withheld_units: int = 0
    withheld_y: float = 0.0
    difference: float | None = None  # served − withheld success rate per retrieval
    low: float | None = None  # Newcombe 95% for this item alone
    high: float | None = None
    p_value: float | None = None
    shrunk: float | None = None
    may_hurt: bool = False  # significantly below withheld after Benjamini–Hochberg
    may_help: bool = False

    @property
    def title(self) -> str:
        return self.item.title if self.item is not None else "(deleted item)"

    @property
    def served_rate(self) -> float | None:
        return self.served_y / self.served_units if self.served_units else None

    @property
    def withheld_rate(self) -> float | None:
        return self.withheld_y / self.withheld_units if self.withheld_units else None

    @property
    def served_pct(self) -> float | None:
        return _percent(self.served_rate)

    @property
    def withheld_pct(self) -> float | None:
        return _percent(self.withheld_rate)

    @property
    def difference_pts(self) -> float | None:
        return _percent(self.difference)

    @property
    def low_pts(self) -> float | None:
        return _percent(self.low)

    @property
    def high_pts(self) -> float | None:
        return _percent(self.high)

    @property
    def served_count(self) -> int:
        return self.item.served_count if self.item is not None else 0

    @property
    def status(self) -> str:
        return self.item.status if self.item is not None else ""


class ItemComparison:
    RANDOMISED = "randomised"  # per-item randomisation: served vs left out on its own, treatment arm
    HOLDOUT_ARM = "holdout_arm"  # served (treatment) vs the holdout arm: the whole set served with the item


# Per item and side (ItemSide) over the period's tallies: judged retrievals
# (units), Σy, judged trajectories and successes.
_ITEMS_SQL = """
SELECT item, side, SUM(units), SUM(y_sum), SUM(judged), SUM(successes)
FROM {tally}
WHERE {window} AND item IS NOT NULL AND ({in_period})
GROUP BY item, side
"""


def _item_sides(bank: Bank, first: date | None, last: date | None, period: Period | None) -> dict:
    params = {"bank": bank.pk}
    sql = _ITEMS_SQL.format(
        tally=RetrievalTally._meta.db_table,
        window=_window_sql(first, last, params),
        in_period=_in_period(period, params),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    sides: dict[uuid.UUID, dict[str, tuple[int, float, int, int]]] = {}
    for item, side, units, y_sum, judged, successes in rows:
        if units > 0:
            sides.setdefault(item, {})[side] = (units, float(y_sum), judged, successes)
    return sides


def _add(*parts: tuple[int, float, int, int] | None) -> tuple[int, float, int, int]:
    """Sum of (units, Σy, judged, successes) tuples; missing sides are zero."""
    found = [part for part in parts if part]
    return tuple(sum(values) for values in zip((0, 0.0, 0, 0), *found)) if found else (0, 0.0, 0, 0)  # type: ignore[return-value]


def item_outcomes(
    *,
    bank: Bank,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    lift: LiftReport | None = None,
) -> list[ItemOutcome]:
    """Per memory item, over the report's period: the served − withheld
    difference of judged retrievals it was a candidate for, with Newcombe's
    interval, a p-value, a shrunken estimate, and ``may_hurt`` / ``may_help``
    only when Benjamini–Hochberg at a 10% false-discovery rate across all
    tested items says so (an item needs MIN_ITEM_JUDGED judged retrievals on
    each side to be tested).

    Which comparison (``ItemComparison``, one for all items of a report):
    when the period has retrievals with per-item randomisation
    (bank.item_holdout_fraction > 0), the item served vs the item left out on
    its own, among treatment retrievals with randomisation on — the item's
    own effect, unbiased; otherwise the item served vs the holdout arm's
    retrievals it would have been served in — the effect of the whole set
    served with it. Ordered by judged served trajectories, most first, at
    most ``limit`` rows. One aggregate over the tallies plus one query for
    the items' titles and status (items of other banks are never fetched);
    ``lift`` is computed when not given."""
    if lift is None:
        lift = bank_lift(bank=bank, since=since, until=until)
    first, last = _days(since, until)
    period = lift.period if lift.verdict != Verdict.NO_HOLDOUT else None
    sides = _item_sides(bank, first, last, period)
    randomised = any(
        ItemSide.SERVED_RANDOMISED in found or ItemSide.WITHHELD_RANDOMISED in found for found in sides.values()
    )
    lift.item_comparison = ItemComparison.RANDOMISED if randomised else ItemComparison.HOLDOUT_ARM
    pairs = []
    for item, found in sides.items():
        if randomised:
            served, withheld = (
                _add(found.get(ItemSide.SERVED_RANDOMISED)),
                _add(found.get(ItemSide.WITHHELD_RANDOMISED)),
            )
        else:
            served = _add(found.get(ItemSide.SERVED), found.get(ItemSide.SERVED_RANDOMISED))
            withheld = _add(found.get(ItemSide.HOLDOUT))
        if served[0] or withheld[0]:
            pairs.append((item, served, withheld))
    effects = item_effects([(served[0], served[1], withheld[0], withheld[1]) for _, served, withheld in pairs])
    outcomes = []
    for (item, served, withheld), effect in zip(pairs, effects):
        outcomes.append(
            ItemOutcome(
                public_id=item,
                item=None,
                served_judged=served[2],
                served_successes=served[3],
                withheld_judged=withheld[2],
                withheld_successes=withheld[3],
                served_units=served[0],
                served_y=served[1],
                withheld_units=withheld[0],
                withheld_y=withheld[1],
                difference=effect.difference,
                low=effect.low,
                high=effect.high,
                p_value=effect.p_value,
                shrunk=effect.shrunk,
                may_hurt=effect.significant and effect.difference < 0,
                may_help=effect.significant and effect.difference > 0,
            )
        )
    outcomes.sort(key=lambda o: (-o.served_judged, -o.withheld_judged, str(o.public_id)))
    outcomes = outcomes[: max(0, int(limit))]
    ids = [o.public_id for o in outcomes]
    if ids:
        items = {
            item.public_id: item
            for item in MemoryItem.objects.filter(bank=bank, public_id__in=ids).only(
                "public_id", "title", "status", "served_count", "bank_id"
            )
        }
        for outcome in outcomes:
            outcome.item = items.get(outcome.public_id)
    return outcomes


WINDOWS = {"7": 7, "30": 30, "90": 90, "all": None}
"""The Impact page's date-range choices (days back; None: all time)."""
