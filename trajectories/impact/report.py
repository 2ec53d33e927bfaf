"""Does this bank help its agents? The bank report behind the Impact page
and ``GET /api/v1/impact`` (``bank_impact``); per item it is
``trajectories.impact.items``. The statistics are plain functions in
``statistics``, ``arms`` and ``verdicts`` (checked on simulated banks by
bench/impact_simulation.py).

What is measured: retrievals are split by ``memories.serving.retrieval.retrieval_perform``
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

Speed: nothing here reads the trajectories. The sums come from
memories.RetrievalTally (kept by memories.serving.tallies from the
one verdict write path, read by ``tallies``), a few rows per day and item."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta

from django.utils import timezone

from accounts.models import Bank
from memories.serving.models import Arm
from trajectories.impact.arms import ArmStats, percent
from trajectories.impact.statistics import MIN_ITEM_UNITS, MIN_UNITS, MIXTURE_SD
from trajectories.impact.tallies import Period, arm_sums, latest_period, window_days
from trajectories.impact.verdicts import Assessment, Difference, Guardrail, Verdict, assess, verdict_text

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


@dataclass
class ImpactReport:
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
        retrievals, else FALLBACK_BASELINE (the API's ``item_baseline``, shown
        for reference: items are compared with their own withheld retrievals)."""
        if self.holdout.units >= MIN_PER_ARM:
            return self.holdout.rate
        return FALLBACK_BASELINE

    @property
    def guardrails(self) -> list[Guardrail]:
        return self.assessment.guardrails

    @property
    def mde_pts(self) -> float | None:
        return percent(self.assessment.mde)

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


def bank_impact(*, bank: Bank, since: datetime | None = None, until: datetime | None = None) -> ImpactReport:
    """Per arm of the latest holdout-fraction period: retrievals, triggered
    retrievals, trajectories reported back, judged, successes, the per-retrieval
    success rate with a Wilson interval and the mean step count; the
    difference treatment − holdout with its always-valid confidence sequence
    (the verdict) and Newcombe's one-look interval; guardrails; power. The
    window is whole UTC days from ``since`` (see window_start) to ``until``.
    Reads the maintained tallies (RetrievalTally), not the trajectories:
    at most eight small queries whatever the data size — the period (up to
    seven, each within one day, or one rolled-up month, of retrievals) and
    the arms' aggregate."""
    first, last = window_days(since, until)
    period = latest_period(bank, first, last)
    arms, excluded = arm_sums(bank, first, last, period)
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
    report = ImpactReport(
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
    report.verdict_text = verdict_text(report)
    return report


WINDOWS = {"7": 7, "30": 30, "90": 90, "all": None}
"""The Impact page's date-range choices (days back; None: all time)."""
