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

A time window filters by when the *retrieval* happened, so an outcome
counts in the window of the retrieval that fed it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection
from django.db.models import Q

from accounts.models import Bank
from memories.models import Arm, MemoryItem, RetrievalEvent
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
from trajectories.models import Label, Trajectory

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
        return None if self.rate is None else self.rate * 100

    @property
    def low_pct(self) -> float | None:
        return None if self.low is None else self.low * 100

    @property
    def high_pct(self) -> float | None:
        return None if self.high is None else self.high * 100

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
        return None if self.report_rate is None else self.report_rate * 100


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

    @property
    def fraction_pct(self) -> float | None:
        return None if self.fraction is None else self.fraction * 100


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
        return None if self.assessment.mde is None else self.assessment.mde * 100

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


def _window(prefix: str, since: datetime | None, until: datetime | None) -> Q:
    q = Q()
    if since is not None:
        q &= Q(**{f"{prefix}created_at__gte": since})
    if until is not None:
        q &= Q(**{f"{prefix}created_at__lt": until})
    return q


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


def _events(bank: Bank, since: datetime | None, until: datetime | None):
    return RetrievalEvent.objects.filter(Q(bank=bank) & _window("", since, until))


def _period(bank: Bank, since: datetime | None, until: datetime | None) -> Period | None:
    """The latest holdout-fraction period of the window with a holdout (or
    with fractions not recorded); None when every retrieval of the window was
    assigned with fraction 0. Two indexed queries."""
    events = _events(bank, since, until)
    latest = (
        events.filter(Q(holdout_fraction__isnull=True) | Q(holdout_fraction__gt=0))
        .order_by("-created_at", "-id")
        .values_list("holdout_fraction", "created_at")
        .first()
    )
    if latest is None:
        return None
    fraction, at = latest
    earlier = events.filter(created_at__lt=at)
    other = (
        earlier.filter(holdout_fraction__isnull=False)
        if fraction is None
        else earlier.exclude(holdout_fraction=fraction)
    )
    boundary = other.order_by("-created_at").values_list("created_at", flat=True).first()
    return Period(fraction=fraction, after=boundary)


# Per arm, over the retrievals of the period: all retrievals, triggered ones
# (a non-empty `results`), and — per triggered retrieval, one unit — the share
# of its judged trajectories that succeeded (y), its linked and judged
# trajectories, successes and judged step counts. A trajectory counts only
# when it and its retrieval are both this bank's.
_ARMS_SQL = """
SELECT arm,
       COUNT(*) AS retrievals,
       COUNT(*) FILTER (WHERE triggered) AS triggered,
       COUNT(*) FILTER (WHERE triggered AND judged > 0) AS units,
       COALESCE(SUM(y) FILTER (WHERE triggered), 0) AS y_sum,
       COALESCE(SUM(y * y) FILTER (WHERE triggered), 0) AS y_sq_sum,
       COALESCE(SUM(linked) FILTER (WHERE triggered), 0) AS trajectories,
       COALESCE(SUM(judged) FILTER (WHERE triggered), 0) AS judged,
       COALESCE(SUM(successes) FILTER (WHERE triggered), 0) AS successes,
       COALESCE(SUM(steps) FILTER (WHERE triggered), 0) AS steps_sum
FROM (
    SELECT r.id, r.arm,
           COALESCE(jsonb_typeof(r.results) = 'array' AND jsonb_array_length(
               CASE WHEN jsonb_typeof(r.results) = 'array' THEN r.results ELSE '[]'::jsonb END) > 0, false)
               AS triggered,
           COUNT(t.id) AS linked,
           COUNT(t.id) FILTER (WHERE t.verdict IN (%(success)s, %(failure)s)) AS judged,
           COUNT(t.id) FILTER (WHERE t.verdict = %(success)s) AS successes,
           COALESCE(SUM(t.step_count) FILTER (WHERE t.verdict IN (%(success)s, %(failure)s)), 0) AS steps,
           AVG(CASE WHEN t.verdict = %(success)s THEN 1.0 WHEN t.verdict = %(failure)s THEN 0.0 END)::float AS y
    FROM {retrieval} r
    LEFT JOIN {trajectory} t ON t.retrieval_id = r.id AND t.bank_id = r.bank_id
    WHERE r.bank_id = %(bank)s {where}
    GROUP BY r.id, r.arm
) per_retrieval
GROUP BY arm
"""


def _where(since: datetime | None, until: datetime | None, period: Period | None, params: dict) -> str:
    """The SQL condition on retrievals `r` for the window and the period (fills ``params``)."""
    where = ""
    if since is not None:
        where += " AND r.created_at >= %(since)s"
        params["since"] = since
    if until is not None:
        where += " AND r.created_at < %(until)s"
        params["until"] = until
    if period is not None:
        if period.fraction is None:
            where += " AND r.holdout_fraction IS NULL"
        else:
            where += " AND r.holdout_fraction = %(fraction)s"
            params["fraction"] = period.fraction
        if period.after is not None:
            where += " AND r.created_at > %(after)s"
            params["after"] = period.after
    return where


def _arm_stats(bank: Bank, since: datetime | None, until: datetime | None, period: Period | None) -> dict:
    params = {"bank": bank.pk, "success": Label.SUCCESS.value, "failure": Label.FAILURE.value}
    sql = _ARMS_SQL.format(
        retrieval=RetrievalEvent._meta.db_table,
        trajectory=Trajectory._meta.db_table,
        where=_where(since, until, period, params),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    arms = {Arm.TREATMENT.value: ArmStats(arm=Arm.TREATMENT.value), Arm.HOLDOUT.value: ArmStats(arm=Arm.HOLDOUT.value)}
    for arm, retrievals, triggered, units, y_sum, y_sq_sum, trajectories, judged, successes, steps in rows:
        if arm in arms:
            stats = arms[arm]
            stats.retrievals, stats.triggered, stats.units = retrievals, triggered, units
            stats.y_sum, stats.y_sq_sum = float(y_sum), float(y_sq_sum)
            stats.trajectories, stats.judged, stats.successes = trajectories, judged, successes
            stats.steps_sum, stats.steps_n = steps, judged
    return arms


def bank_lift(*, bank: Bank, since: datetime | None = None, until: datetime | None = None) -> LiftReport:
    """Per arm of the latest holdout-fraction period: retrievals, triggered
    retrievals, trajectories reported back, judged, successes, the per-retrieval
    success rate with a Wilson interval and the mean step count; the
    difference treatment − holdout with its always-valid confidence sequence
    (the verdict) and Newcombe's one-look interval; guardrails; power. Four
    queries whatever the data size: the period (two), the arms' aggregate, and
    the window's retrievals outside the period."""
    period = _period(bank, since, until)
    arms = _arm_stats(bank, since, until, period)
    treatment, holdout = arms[Arm.TREATMENT.value], arms[Arm.HOLDOUT.value]
    if period is not None:
        period.excluded = _events(bank, since, until).count() - treatment.retrievals - holdout.retrievals
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
        return None if self.served_rate is None else self.served_rate * 100

    @property
    def withheld_pct(self) -> float | None:
        return None if self.withheld_rate is None else self.withheld_rate * 100

    @property
    def difference_pts(self) -> float | None:
        return None if self.difference is None else self.difference * 100

    @property
    def low_pts(self) -> float | None:
        return None if self.low is None else self.low * 100

    @property
    def high_pts(self) -> float | None:
        return None if self.high is None else self.high * 100

    @property
    def served_count(self) -> int:
        return self.item.served_count if self.item is not None else 0

    @property
    def status(self) -> str:
        return self.item.status if self.item is not None else ""


# One row per item id found in the `results` of the period's retrievals that
# have a judged trajectory: per arm, the retrievals (units), the sum of their
# outcomes y, judged trajectories and successes. DISTINCT inside the lateral
# join counts an item once per retrieval even if listed twice; non-object
# entries and non-array `results` are skipped, never an error.
_ITEM_OUTCOMES_SQL = """
WITH per_retrieval AS (
    SELECT r.id, r.arm, r.results,
           COUNT(t.id) AS judged,
           COUNT(t.id) FILTER (WHERE t.verdict = %(success)s) AS successes,
           AVG(CASE WHEN t.verdict = %(success)s THEN 1.0 ELSE 0.0 END)::float AS y
    FROM {retrieval} r
    JOIN {trajectory} t ON t.retrieval_id = r.id AND t.bank_id = r.bank_id
    WHERE r.bank_id = %(bank)s AND t.verdict IN (%(success)s, %(failure)s) {where}
    GROUP BY r.id, r.arm, r.results
)
SELECT e.item_id,
       COALESCE(SUM(p.judged) FILTER (WHERE p.arm = %(treatment)s), 0) AS served_judged,
       COALESCE(SUM(p.successes) FILTER (WHERE p.arm = %(treatment)s), 0) AS served_successes,
       COALESCE(SUM(p.judged) FILTER (WHERE p.arm = %(holdout)s), 0) AS withheld_judged,
       COALESCE(SUM(p.successes) FILTER (WHERE p.arm = %(holdout)s), 0) AS withheld_successes,
       COUNT(*) FILTER (WHERE p.arm = %(treatment)s) AS served_units,
       COALESCE(SUM(p.y) FILTER (WHERE p.arm = %(treatment)s), 0) AS served_y,
       COUNT(*) FILTER (WHERE p.arm = %(holdout)s) AS withheld_units,
       COALESCE(SUM(p.y) FILTER (WHERE p.arm = %(holdout)s), 0) AS withheld_y
FROM per_retrieval p
CROSS JOIN LATERAL (
    SELECT DISTINCT elem ->> 'id' AS item_id
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p.results) = 'array' THEN p.results ELSE '[]'::jsonb END) AS elem
    WHERE jsonb_typeof(elem) = 'object' AND elem ->> 'id' ~* %(uuid_re)s
) e
GROUP BY e.item_id
"""
_UUID_RE = r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"


def item_outcomes(
    *,
    bank: Bank,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    lift: LiftReport | None = None,
) -> list[ItemOutcome]:
    """Per memory item, over the report's period: the judged retrievals that
    served it (treatment) and that would have served it but held it out
    (holdout), the served − withheld difference with Newcombe's interval, a
    p-value, and ``may_hurt`` / ``may_help`` only when Benjamini–Hochberg at
    a 10% false-discovery rate across all tested items says so (an item
    needs MIN_ITEM_JUDGED judged retrievals on each side to be tested). The
    comparison is within the retrievals the item was a candidate for, so an
    item served on hard tasks is compared with hard tasks. Ordered by judged
    served trajectories, most first, at most ``limit`` rows. One raw SQL
    aggregate plus one query for the items' titles and status (items of
    other banks are never fetched); ``lift`` is computed when not given."""
    if lift is None:
        lift = bank_lift(bank=bank, since=since, until=until)
    params = {
        "bank": bank.pk,
        "treatment": Arm.TREATMENT.value,
        "holdout": Arm.HOLDOUT.value,
        "success": Label.SUCCESS.value,
        "failure": Label.FAILURE.value,
        "uuid_re": _UUID_RE,
    }
    period = lift.period if lift.verdict != Verdict.NO_HOLDOUT else None
    sql = _ITEM_OUTCOMES_SQL.format(
        retrieval=RetrievalEvent._meta.db_table,
        trajectory=Trajectory._meta.db_table,
        where=_where(since, until, period, params),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    effects = item_effects([(row[5], float(row[6]), row[7], float(row[8])) for row in rows])
    outcomes = []
    for row, effect in zip(rows, effects):
        outcomes.append(
            ItemOutcome(
                public_id=uuid.UUID(row[0]),
                item=None,
                served_judged=row[1],
                served_successes=row[2],
                withheld_judged=row[3],
                withheld_successes=row[4],
                served_units=row[5],
                served_y=float(row[6]),
                withheld_units=row[7],
                withheld_y=float(row[8]),
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
