"""Does this bank help its agents? Read-only selectors and the statistics
behind the Impact page and ``GET /api/v1/impact``.

What is measured: retrievals are split by ``memories.services.retrieval_perform``
into a treatment arm (items served) and a holdout arm (nothing served; the
event still records what *would* have been served). Agents that send
``retrieval_id`` with their trajectory link an outcome to its arm. Success is
the trajectory's effective verdict (latest human, else trusted agent signal,
else LLM judge); unjudged trajectories and trajectories without a retrieval
are left out.

Statistics (``math``/``statistics`` only):
- each arm's success rate with a Wilson score 95% interval;
- the difference treatment − holdout with Newcombe's hybrid score interval
  (Newcombe 1998, method 10), built from the two Wilson intervals. It keeps
  its coverage near 95% for small arms and rates near 0 or 1, where the Wald
  interval is too narrow.

The interval is for one look at the data; checking the page every day and
stopping at the first "helps" overstates the evidence (the page says so).
A time window filters by when the *retrieval* happened, so an outcome
counts in the window of the retrieval that fed it."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime
from statistics import NormalDist

from django.db import connection
from django.db.models import Count, Q

from accounts.models import Bank
from memories.models import Arm, MemoryItem, RetrievalEvent
from trajectories.models import Label, Trajectory

MIN_PER_ARM = 30
"""Judged trajectories each arm needs before a verdict other than "not enough data"."""
MIN_ITEM_JUDGED = 10
"""Judged served trajectories an item needs before it may be flagged."""
FALLBACK_BASELINE = 0.5
"""Baseline success rate for flagging items when the holdout arm is too small to be one."""
CONFIDENCE = 0.95
Z = NormalDist().inv_cdf(1 - (1 - CONFIDENCE) / 2)  # 1.959963984540054

METHOD = (
    "Wilson score 95% interval per arm; difference with Newcombe's hybrid score 95% interval "
    "(method 10 of Newcombe 1998)."
)
JUDGED = (Label.SUCCESS, Label.FAILURE)


# --- statistics --------------------------------------------------------------------------------


def wilson_interval(successes: int, n: int, z: float = Z) -> tuple[float, float] | None:
    """The Wilson score interval for ``successes`` of ``n``; None when n is 0."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # Exact at the edges (0/n starts at 0, n/n ends at 1); float rounding would leave ±1e-17.
    low = 0.0 if successes <= 0 else max(0.0, center - half)
    high = 1.0 if successes >= n else min(1.0, center + half)
    return low, high


def newcombe_difference(x1: int, n1: int, x2: int, n2: int, z: float = Z) -> tuple[float, float, float] | None:
    """(p1 − p2, low, high): Newcombe's hybrid score interval for the
    difference of two independent proportions; None when either n is 0."""
    first, second = wilson_interval(x1, n1, z), wilson_interval(x2, n2, z)
    if first is None or second is None:
        return None
    p1, p2 = x1 / n1, x2 / n2
    (l1, u1), (l2, u2) = first, second
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, max(-1.0, low), min(1.0, high)


# --- the bank report ----------------------------------------------------------------------------


@dataclass
class ArmStats:
    arm: str
    retrievals: int = 0
    reported: int = 0  # trajectories linked to a retrieval of this arm
    judged: int = 0
    successes: int = 0

    @property
    def failures(self) -> int:
        return self.judged - self.successes

    @property
    def rate(self) -> float | None:
        return self.successes / self.judged if self.judged else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.successes, self.judged)

    @property
    def low(self) -> float | None:
        return self.interval[0] if self.judged else None

    @property
    def high(self) -> float | None:
        return self.interval[1] if self.judged else None

    # Percent views for templates (None when nothing is judged).
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
        """How many more judged trajectories this arm needs for a verdict."""
        return max(0, MIN_PER_ARM - self.judged)

    @property
    def report_rate(self) -> float | None:
        """Share of retrievals that came back as a trajectory (selection check)."""
        return self.reported / self.retrievals if self.retrievals else None


@dataclass
class Difference:
    """treatment − holdout success rate, as fractions (0.4 = 40 points)."""

    estimate: float
    low: float
    high: float

    @property
    def estimate_pts(self) -> float:
        return self.estimate * 100

    @property
    def low_pts(self) -> float:
        return self.low * 100

    @property
    def high_pts(self) -> float:
        return self.high * 100


class Verdict:
    NO_HOLDOUT = "no_holdout"
    NOT_ENOUGH_DATA = "not_enough_data"
    HELPS = "helps"
    HURTS = "hurts"
    NO_DIFFERENCE = "no_difference"


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
    method: str = METHOD
    min_per_arm: int = MIN_PER_ARM

    @property
    def holdout_configured(self) -> bool:
        """False when the bank never withholds (fraction 0) and no holdout
        retrieval exists in the window: then there is nothing to compare."""
        return self.verdict != Verdict.NO_HOLDOUT

    @property
    def baseline(self) -> float:
        """The success rate an item is compared with: the holdout arm's when
        it has MIN_PER_ARM judged trajectories, else FALLBACK_BASELINE."""
        if self.holdout.judged >= MIN_PER_ARM:
            return self.holdout.rate
        return FALLBACK_BASELINE

    @property
    def baseline_pct(self) -> float:
        return self.baseline * 100

    @property
    def baseline_is_holdout(self) -> bool:
        return self.holdout.judged >= MIN_PER_ARM


def _window(prefix: str, since: datetime | None, until: datetime | None) -> Q:
    q = Q()
    if since is not None:
        q &= Q(**{f"{prefix}created_at__gte": since})
    if until is not None:
        q &= Q(**{f"{prefix}created_at__lt": until})
    return q


def _points(value: float) -> str:
    return f"{value * 100:+.1f}"


def _verdict(
    treatment: ArmStats, holdout: ArmStats, difference: Difference | None, configured: bool
) -> tuple[str, str]:
    if not configured:
        return Verdict.NO_HOLDOUT, (
            "No holdout is configured, so there is nothing to compare with: the numbers below are the "
            "treatment arm alone, not a measurement of lift. Set a holdout fraction (e.g. 0.1) in the bank settings."
        )
    if treatment.judged < MIN_PER_ARM or holdout.judged < MIN_PER_ARM or difference is None:
        needs = []
        for stats, name in (
            (treatment, "the treatment arm (memories served)"),
            (holdout, "the holdout arm (memories withheld)"),
        ):
            if stats.needed:
                needs.append(f"{name} needs {stats.needed} more")
        return Verdict.NOT_ENOUGH_DATA, (
            f"Not enough data yet: each arm needs at least {MIN_PER_ARM} judged trajectories; "
            + " and ".join(needs)
            + "."
        )
    span = f"(95% interval {_points(difference.low)} to {_points(difference.high)} points)"
    if difference.low > 0:
        return Verdict.HELPS, (
            f"The bank helps: agents that were served memories succeeded {difference.estimate * 100:.1f} points "
            f"more often than agents in the holdout {span}."
        )
    if difference.high < 0:
        return Verdict.HURTS, (
            f"The bank hurts: agents that were served memories succeeded {-difference.estimate * 100:.1f} points "
            f"less often than agents in the holdout {span}."
        )
    return Verdict.NO_DIFFERENCE, (
        f"No measurable difference: served minus withheld is {_points(difference.estimate)} points {span}, "
        "an interval that includes zero."
    )


def bank_lift(*, bank: Bank, since: datetime | None = None, until: datetime | None = None) -> LiftReport:
    """Per arm: retrievals, trajectories reported back, judged, successes and
    the Wilson interval; the Newcombe interval of treatment − holdout and a
    verdict in plain words. Two aggregate queries whatever the data size:
    retrievals per arm, and linked trajectories per arm (both filtered by the
    retrieval's time). A trajectory is counted only when it and its retrieval
    are both this bank's."""
    retrievals = (
        RetrievalEvent.objects.filter(Q(bank=bank) & _window("", since, until))
        .values("arm")
        .annotate(n=Count("id"))
        .order_by()
    )
    arms = {Arm.TREATMENT.value: ArmStats(Arm.TREATMENT.value), Arm.HOLDOUT.value: ArmStats(Arm.HOLDOUT.value)}
    for row in retrievals:
        if row["arm"] in arms:
            arms[row["arm"]].retrievals = row["n"]
    outcomes = (
        Trajectory.objects.filter(Q(bank=bank, retrieval__bank=bank) & _window("retrieval__", since, until))
        .values("retrieval__arm")
        .annotate(
            reported=Count("id"),
            judged=Count("id", filter=Q(verdict__in=JUDGED)),
            successes=Count("id", filter=Q(verdict=Label.SUCCESS)),
        )
        .order_by()
    )
    for row in outcomes:
        stats = arms.get(row["retrieval__arm"])
        if stats is not None:
            stats.reported, stats.judged, stats.successes = row["reported"], row["judged"], row["successes"]
    treatment, holdout = arms[Arm.TREATMENT.value], arms[Arm.HOLDOUT.value]
    configured = bank.holdout_fraction > 0 or holdout.retrievals > 0
    difference = None
    if configured:
        found = newcombe_difference(treatment.successes, treatment.judged, holdout.successes, holdout.judged)
        if found is not None:
            difference = Difference(*found)
    verdict, text = _verdict(treatment, holdout, difference, configured)
    return LiftReport(
        since=since,
        until=until,
        holdout_fraction=bank.holdout_fraction,
        treatment=treatment,
        holdout=holdout,
        difference=difference,
        verdict=verdict,
        verdict_text=text,
    )


# --- per item -------------------------------------------------------------------------------------


@dataclass
class ItemOutcome:
    public_id: uuid.UUID
    item: MemoryItem | None  # None: the item no longer exists
    served_judged: int
    served_successes: int
    withheld_judged: int
    withheld_successes: int
    may_hurt: bool = False

    @property
    def title(self) -> str:
        return self.item.title if self.item is not None else "(deleted item)"

    @property
    def served_rate(self) -> float | None:
        return self.served_successes / self.served_judged if self.served_judged else None

    @property
    def withheld_rate(self) -> float | None:
        return self.withheld_successes / self.withheld_judged if self.withheld_judged else None

    @property
    def served_pct(self) -> float | None:
        return None if self.served_rate is None else self.served_rate * 100

    @property
    def withheld_pct(self) -> float | None:
        return None if self.withheld_rate is None else self.withheld_rate * 100

    @property
    def served_count(self) -> int:
        return self.item.served_count if self.item is not None else 0

    @property
    def status(self) -> str:
        return self.item.status if self.item is not None else ""


# One row per item id found in the `results` of this bank's retrievals that
# have a judged trajectory: counts of judged/successful trajectories whose
# retrieval served it (treatment) or withheld it (holdout). DISTINCT inside
# the lateral join counts an item once per retrieval even if listed twice;
# non-object entries and non-array `results` are skipped, never an error.
_ITEM_OUTCOMES_SQL = """
SELECT e.item_id,
       COUNT(*) FILTER (WHERE r.arm = %(treatment)s) AS served_judged,
       COUNT(*) FILTER (WHERE r.arm = %(treatment)s AND t.verdict = %(success)s) AS served_successes,
       COUNT(*) FILTER (WHERE r.arm = %(holdout)s) AS withheld_judged,
       COUNT(*) FILTER (WHERE r.arm = %(holdout)s AND t.verdict = %(success)s) AS withheld_successes
FROM {retrieval} r
JOIN {trajectory} t ON t.retrieval_id = r.id AND t.bank_id = r.bank_id
CROSS JOIN LATERAL (
    SELECT DISTINCT elem ->> 'id' AS item_id
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r.results) = 'array' THEN r.results ELSE '[]'::jsonb END) AS elem
    WHERE jsonb_typeof(elem) = 'object' AND elem ->> 'id' ~* %(uuid_re)s
) e
WHERE r.bank_id = %(bank)s AND t.verdict IN (%(success)s, %(failure)s) {window}
GROUP BY e.item_id
ORDER BY served_judged DESC, withheld_judged DESC, e.item_id
LIMIT %(limit)s
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
    """Per memory item, the judged trajectories whose retrieval served it
    (treatment) and whose retrieval would have served it but held it out
    (holdout), with successes — ordered by judged served trajectories, most
    first, at most ``limit`` rows. One raw SQL aggregate over
    ``jsonb_array_elements(results)`` plus one query for the items' titles and
    status (items of other banks are never fetched). An item with at least
    MIN_ITEM_JUDGED judged served trajectories whose success rate is below
    ``lift.baseline`` is flagged ``may_hurt``; ``lift`` is computed when not
    given (two more queries)."""
    if lift is None:
        lift = bank_lift(bank=bank, since=since, until=until)
    window, params = (
        "",
        {
            "bank": bank.pk,
            "treatment": Arm.TREATMENT.value,
            "holdout": Arm.HOLDOUT.value,
            "success": Label.SUCCESS.value,
            "failure": Label.FAILURE.value,
            "uuid_re": _UUID_RE,
            "limit": max(0, int(limit)),
        },
    )
    if since is not None:
        window += " AND r.created_at >= %(since)s"
        params["since"] = since
    if until is not None:
        window += " AND r.created_at < %(until)s"
        params["until"] = until
    sql = _ITEM_OUTCOMES_SQL.format(
        retrieval=RetrievalEvent._meta.db_table, trajectory=Trajectory._meta.db_table, window=window
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    ids = [uuid.UUID(row[0]) for row in rows]
    items = (
        {
            item.public_id: item
            for item in MemoryItem.objects.filter(bank=bank, public_id__in=ids).only(
                "public_id", "title", "status", "served_count", "bank_id"
            )
        }
        if ids
        else {}
    )
    baseline = lift.baseline
    outcomes = []
    for public_id, (_, served_judged, served_successes, withheld_judged, withheld_successes) in zip(ids, rows):
        outcome = ItemOutcome(
            public_id=public_id,
            item=items.get(public_id),
            served_judged=served_judged,
            served_successes=served_successes,
            withheld_judged=withheld_judged,
            withheld_successes=withheld_successes,
        )
        outcome.may_hurt = served_judged >= MIN_ITEM_JUDGED and outcome.served_rate < baseline
        outcomes.append(outcome)
    return outcomes


WINDOWS = {"7": 7, "30": 30, "90": 90, "all": None}
"""The Impact page's date-range choices (days back; None: all time)."""
