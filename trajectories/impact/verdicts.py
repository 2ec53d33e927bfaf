"""The Impact verdict: ``assess`` turns two arms into a decision (helps,
hurts, no difference, not enough data, or withheld by a guardrail) with the
always-valid interval it follows, the guardrails and the power; no Django.
``verdict_text`` says the report's verdict in words."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING

from trajectories.impact.arms import ArmSums
from trajectories.impact.statistics import (
    GUARDRAIL_P,
    MIN_UNITS,
    POWER,
    always_valid_p,
    mixture_halfwidth,
    newcombe_difference,
    srm_p_value,
    two_proportion_p,
)

if TYPE_CHECKING:
    from trajectories.impact.report import ImpactReport


class Decision:
    NOT_ENOUGH_DATA = "not_enough_data"
    WITHHELD = "withheld"  # a guardrail fired
    HELPS = "helps"
    HURTS = "hurts"
    NO_DIFFERENCE = "no_difference"


@dataclass
class Guardrail:
    name: str  # "sample_ratio" | "reporting"
    ok: bool
    p_value: float | None
    detail: str


@dataclass
class Assessment:
    estimate: float | None = None
    cs_low: float | None = None  # always-valid 95% confidence sequence
    cs_high: float | None = None
    fixed_low: float | None = None  # Newcombe 95%, one look only
    fixed_high: float | None = None
    always_valid_p: float | None = None
    decision: str = Decision.NOT_ENOUGH_DATA
    guardrails: list[Guardrail] = field(default_factory=list)
    mde: float | None = None  # smallest lift detected with 80% probability now
    more_needed: dict[int, int | None] = field(default_factory=dict)  # points → more judged trajectories

    @property
    def failed_guardrails(self) -> list[Guardrail]:
        return [g for g in self.guardrails if not g.ok]


def difference_variance(treatment: ArmSums, holdout: ArmSums) -> float | None:
    if not treatment.units or not holdout.units:
        return None
    return treatment.variance + holdout.variance


def minimum_detectable_effect(variance: float, power: float = POWER) -> float:
    """The effect the always-valid rule detects with probability ``power`` at
    this variance: the confidence-sequence half-width plus z_power standard errors."""
    return mixture_halfwidth(variance) + NormalDist().inv_cdf(power) * math.sqrt(variance)


def more_needed(treatment: ArmSums, holdout: ArmSums, effect: float, fraction: float | None) -> int | None:
    """About how many more judged trajectories (both arms, split by the
    holdout ``fraction``, else by the arms' observed shares) until a lift of
    ``effect`` would be detected with 80% probability; 0 when it already
    would, None when the split is unknown."""
    total = treatment.retrievals + holdout.retrievals
    share = fraction if fraction is not None and 0 < fraction < 1 else None
    if share is None and total and 0 < holdout.retrievals < total:
        share = holdout.retrievals / total
    if share is None:
        return None
    trajectories_per_unit = (treatment.judged + holdout.judged) / max(1, treatment.units + holdout.units)
    p = (
        0.5
        if not (treatment.units and holdout.units)
        else (treatment.y_sum + holdout.y_sum) / (treatment.units + holdout.units)
    )
    p = min(max(p, 0.05), 0.95)
    deff_t, deff_h = treatment.design_effect, holdout.design_effect

    def detects(extra_units: int) -> bool:
        n_t = treatment.units + extra_units * (1 - share)
        n_h = holdout.units + extra_units * share
        if n_t <= 0 or n_h <= 0:
            return False
        variance = p * (1 - p) * (deff_t / n_t + deff_h / n_h)
        return minimum_detectable_effect(variance) <= effect

    if detects(0):
        return 0
    high = 16
    while not detects(high):
        high *= 2
        if high > 10**9:
            return None
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if detects(mid) else (mid, high)
    return math.ceil(high * trajectories_per_unit)


def assess(treatment: ArmSums, holdout: ArmSums, fraction: float | None) -> Assessment:
    """The verdict on treatment − holdout for one holdout-fraction period:
    the always-valid interval decides ("helps" when it lies above zero,
    "hurts" below, else "no difference"); fewer than MIN_UNITS judged
    retrievals in an arm is "not enough data"; a failed guardrail
    (sample-ratio mismatch against ``fraction``, or differential reporting)
    withholds the verdict. ``fraction`` None: not recorded, no ratio check."""
    result = Assessment()
    variance = difference_variance(treatment, holdout)
    if variance is not None:
        result.estimate = treatment.rate - holdout.rate
        half = mixture_halfwidth(variance)
        result.cs_low, result.cs_high = max(-1.0, result.estimate - half), min(1.0, result.estimate + half)
        result.always_valid_p = always_valid_p(result.estimate, variance)
        fixed = newcombe_difference(
            treatment.rate * treatment.effective_n,
            treatment.effective_n,
            holdout.rate * holdout.effective_n,
            holdout.effective_n,
        )
        result.fixed_low, result.fixed_high = fixed[1], fixed[2]
        result.mde = minimum_detectable_effect(variance)
    result.more_needed = {points: more_needed(treatment, holdout, points / 100, fraction) for points in (5, 10)}
    result.guardrails = guardrails(treatment, holdout, fraction)
    if treatment.units < MIN_UNITS or holdout.units < MIN_UNITS or variance is None:
        result.decision = Decision.NOT_ENOUGH_DATA
    elif result.failed_guardrails:
        result.decision = Decision.WITHHELD
    elif result.cs_low > 0:
        result.decision = Decision.HELPS
    elif result.cs_high < 0:
        result.decision = Decision.HURTS
    else:
        result.decision = Decision.NO_DIFFERENCE
    return result


def guardrails(treatment: ArmSums, holdout: ArmSums, fraction: float | None) -> list[Guardrail]:
    """The checks that must pass before a verdict: the arms' shares of
    retrievals match the configured fraction, and both arms report back
    (judged) at the same rate."""
    checks = []
    total = treatment.retrievals + holdout.retrievals
    srm = srm_p_value(holdout.retrievals, total, fraction) if fraction is not None else None
    if srm is None:
        detail = (
            "The holdout fraction of these retrievals was not recorded, so the arms' shares cannot be checked."
            if fraction is None
            else "No retrievals to check yet."
        )
        checks.append(Guardrail("sample_ratio", True, None, detail))
    else:
        share = holdout.retrievals / total
        checks.append(
            Guardrail(
                "sample_ratio",
                srm >= GUARDRAIL_P,
                srm,
                f"{share * 100:.1f}% of {total} retrievals were held out; the configured fraction is "
                f"{fraction * 100:.1f}% (chi-square p = {srm:.2g}).",
            )
        )
    reporting = two_proportion_p(treatment.units, treatment.triggered, holdout.units, holdout.triggered)
    if reporting is None:
        checks.append(Guardrail("reporting", True, None, "No retrievals to compare reporting yet."))
    else:
        t_share, h_share = treatment.units / treatment.triggered, holdout.units / holdout.triggered
        checks.append(
            Guardrail(
                "reporting",
                reporting >= GUARDRAIL_P,
                reporting,
                f"{t_share * 100:.1f}% of treatment retrievals and {h_share * 100:.1f}% of holdout retrievals "
                f"came back judged (two-proportion test p = {reporting:.2g}).",
            )
        )
    return checks


# --- the report's verdict in words ------------------------------------------------------------


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


def _points(value: float) -> str:
    return f"{value * 100:+.1f}"


_GUARDRAIL_REASONS = {
    "sample_ratio": "the arms' shares of retrievals do not match the holdout fraction, so assignment or logging "
    "is broken somewhere",
    "reporting": "the two arms report back at different rates, so the outcomes that came back are not comparable",
}


def verdict_text(report: ImpactReport) -> str:
    """The report's verdict in one paragraph: what was found, or what is missing for a verdict."""
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
            f"Not enough data yet: each arm needs at least {MIN_UNITS} judged retrievals; " + " and ".join(needs) + "."
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
