"""The canary's verdict: the canary release against the production release
on the retrievals served since the canary started, with Impact's statistics
(the always-valid confidence sequence, the sample-ratio and reporting
guardrails), and the automatic rollback of a canary that is significantly
worse, for the banks that opted in (run by a beat task)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, FloatField, Q, Sum
from django.db.models.functions import Cast, Coalesce, NullIf

from accounts.models import Bank
from memories.releases.labels import release_canary_stop
from memories.releases.models import BankReleasing
from memories.releases.selectors import bank_releasing
from memories.serving.models import Arm, RetrievalEvent
from trajectories.impact.arms import ArmSums
from trajectories.impact.verdicts import Assessment, Decision, Guardrail, assess


@dataclass
class CanaryVerdict:
    """The canary's comparison: ``decision`` is Impact's (helps, hurts, no
    difference, not enough data, withheld by a guardrail), ``estimate`` and
    the confidence sequence are canary − production success rates."""

    production: int
    canary: int
    fraction: float  # the canary's share of all retrievals
    production_sums: ArmSums
    canary_sums: ArmSums
    assessment: Assessment

    @property
    def decision(self) -> str:
        return self.assessment.decision

    @property
    def cost_rows(self) -> list[tuple[str, ArmSums]]:
        """The two arms' sums with their names, for the cost line of the page."""
        return [(f"Canary {self.canary}", self.canary_sums), (f"Production {self.production}", self.production_sums)]

    @property
    def worse(self) -> bool:
        return self.assessment.decision == Decision.HURTS

    @property
    def text(self) -> str:
        a = self.assessment
        if a.decision == Decision.NOT_ENOUGH_DATA:
            return (
                f"Not enough data yet: {self.canary_sums.units} judged canary retrievals and "
                f"{self.production_sums.units} judged production ones (30 each are needed)."
            )
        if a.decision == Decision.WITHHELD:
            return "No verdict: " + " ".join(g.detail for g in a.failed_guardrails)
        interval = f"{a.estimate * 100:+.1f} points (95 % always-valid interval {a.cs_low * 100:+.1f} to {a.cs_high * 100:+.1f})"
        if a.decision == Decision.HURTS:
            return f"Release {self.canary} is significantly worse than release {self.production}: {interval}."
        if a.decision == Decision.HELPS:
            return f"Release {self.canary} is significantly better than release {self.production}: {interval}."
        return (
            f"No significant difference between release {self.canary} and release {self.production} so far: {interval}."
        )


USAGE_COUNTERS = ("usage_runs", "usage_successes", "prompt_tokens", "completion_tokens")


def _sums(bank: Bank, releasing: BankReleasing) -> dict[int, ArmSums]:
    """Per release number, the ArmSums of the bank's first retrievals served
    (treatment arm) since the canary started, by the production or the canary;
    the memory blocks of every retrieval (later steps of a run too), as Impact counts them."""
    first = Q(run__isnull=True)
    triggered = first & ~Q(results=[])
    unit = triggered & Q(judged__gt=0)
    y = Cast(F("successes"), FloatField()) / NullIf(Cast(F("judged"), FloatField()), 0.0)
    rows = (
        RetrievalEvent.objects.filter(
            bank_id=bank.pk,
            arm=Arm.TREATMENT,
            created_at__gte=releasing.canary_started_at,
            release__in=[releasing.production.number, releasing.canary.number],
        )
        .values("release")
        .annotate(
            retrievals=Count("id", filter=first),
            n_triggered=Count("id", filter=triggered),
            units=Count("id", filter=unit),
            y_sum=Coalesce(Sum(y, filter=unit), 0.0),
            y_sq_sum=Coalesce(Sum(y * y, filter=unit), 0.0),
            trajectories=Coalesce(Sum("linked", filter=triggered), 0),
            n_judged=Coalesce(Sum("judged", filter=triggered), 0),
            n_successes=Coalesce(Sum("successes", filter=triggered), 0),
            steps_sum=Coalesce(Sum("steps", filter=triggered), 0),
            **{f"n_{name}": Coalesce(Sum(name, filter=triggered), 0) for name in USAGE_COUNTERS},
            n_memory_blocks=Count("id"),
            n_memory_tokens=Coalesce(Sum("memory_tokens"), 0),
        )
        .filter(retrievals__gt=0)
    )
    return {
        row["release"]: ArmSums(
            retrievals=row["retrievals"],
            triggered=row["n_triggered"],
            units=row["units"],
            y_sum=row["y_sum"],
            y_sq_sum=row["y_sq_sum"],
            trajectories=row["trajectories"],
            judged=row["n_judged"],
            successes=row["n_successes"],
            steps_sum=row["steps_sum"],
            steps_n=row["n_judged"],
            memory_blocks=row["n_memory_blocks"],
            memory_tokens=row["n_memory_tokens"],
            **{name: row[f"n_{name}"] for name in USAGE_COUNTERS},
        )
        for row in rows
    }


def _canary_words(guardrail: Guardrail, canary: ArmSums, production: ArmSums, expected: float) -> Guardrail:
    """Impact's guardrail, told in the canary's terms (production plays the holdout's part)."""
    if guardrail.p_value is None:
        return guardrail
    if guardrail.name == "sample_ratio":
        total = canary.retrievals + production.retrievals
        detail = (
            f"{canary.retrievals / total * 100:.1f}% of {total} served retrievals got the canary; "
            f"{(1 - expected) * 100:.1f}% were expected (chi-square p = {guardrail.p_value:.2g})."
        )
    else:
        detail = (
            f"{canary.units / max(1, canary.triggered) * 100:.1f}% of canary retrievals and "
            f"{production.units / max(1, production.triggered) * 100:.1f}% of production ones came back judged "
            f"(two-proportion test p = {guardrail.p_value:.2g})."
        )
    return Guardrail(guardrail.name, guardrail.ok, guardrail.p_value, detail)


def canary_verdict(*, bank: Bank, releasing: BankReleasing | None = None) -> CanaryVerdict | None:
    """The verdict on ``bank``'s canary, None when it has none. One query."""
    releasing = releasing or bank_releasing(bank=bank)
    if not releasing.canary_id or not releasing.production_id or releasing.canary_started_at is None:
        return None
    sums = _sums(bank, releasing)
    production = sums.get(releasing.production.number, ArmSums())
    canary = sums.get(releasing.canary.number, ArmSums())
    served = 1 - (bank.holdout_fraction or 0)
    # Production's expected share of the served (not held out) retrievals: the "holdout" side of Impact's SRM check.
    expected = max(0.0, served - releasing.canary_fraction) / served if served > 0 else None
    assessment = assess(canary, production, expected)
    assessment.guardrails = [_canary_words(g, canary, production, expected or 0) for g in assessment.guardrails]
    return CanaryVerdict(
        production=releasing.production.number,
        canary=releasing.canary.number,
        fraction=releasing.canary_fraction,
        production_sums=production,
        canary_sums=canary,
        assessment=assessment,
    )


def canary_auto_rollback(*, bank: Bank) -> CanaryVerdict | None:
    """Roll ``bank``'s canary back when it opted in and the canary is
    significantly worse than production (audited, announced on its
    dashboard). Returns the verdict that decided it, else None."""
    releasing = bank_releasing(bank=bank)
    if not releasing.auto_rollback:
        return None
    verdict = canary_verdict(bank=bank, releasing=releasing)
    if verdict is None or not verdict.worse:
        return None
    note = f"Canary release {verdict.canary} was rolled back automatically. {verdict.text}"
    return verdict if release_canary_stop(bank=bank, note=note, automatic=True) else None


def canaries_auto_rollback() -> int:
    """canary_auto_rollback for every active bank with a canary that opted in; how many were rolled back."""
    banks = Bank.objects.filter(
        releasing__auto_rollback=True, releasing__canary__isnull=False, archived_at__isnull=True
    ).select_related("team")
    return sum(canary_auto_rollback(bank=bank) is not None for bank in banks)
