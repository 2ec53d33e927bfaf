"""An arm of the Impact comparison: ``ArmSums`` (what the statistics need,
no Django) and ``ArmStats`` (the same with the views the page and the API
show). The treatment arm was served memories; the holdout arm was not."""

from __future__ import annotations

from dataclasses import dataclass

from trajectories.impact.statistics import MIN_UNITS, wilson_interval


@dataclass
class ArmSums:
    """One arm's retrievals and outcomes in the analysed period. ``units``
    counts retrievals with at least one judged trajectory; ``y_sum`` and
    ``y_sq_sum`` sum their outcomes y (share of successful trajectories)."""

    retrievals: int = 0  # all retrievals of the arm
    triggered: int = 0  # of those, retrievals that served (or would have served) at least one item
    units: int = 0  # triggered retrievals with at least one judged trajectory
    y_sum: float = 0.0
    y_sq_sum: float = 0.0
    trajectories: int = 0  # trajectories linked to triggered retrievals
    judged: int = 0  # of those, judged
    successes: int = 0
    steps_sum: int = 0  # step counts of the judged trajectories
    steps_n: int = 0
    usage_runs: int = 0  # judged trajectories whose agent reported token usage
    usage_successes: int = 0  # of those, successes
    prompt_tokens: int = 0  # their tokens
    completion_tokens: int = 0
    memory_blocks: int = 0  # memory blocks served (every retrieval, later steps of a run included)
    memory_tokens: int = 0  # their estimated tokens (holdout: 0)

    @property
    def rate(self) -> float | None:
        """Mean outcome per retrieval (successes / judged with one trajectory each)."""
        return self.y_sum / self.units if self.units else None

    @property
    def design_effect(self) -> float:
        """s² / (p(1 − p)) of the retrieval outcomes: 1 for one trajectory per
        retrieval, below 1 when groups average independent tries; never below
        units / judged (averaging m trajectories at best divides the variance by m)."""
        if not self.units:
            return 1.0
        p = self.y_sum / self.units
        binomial = p * (1 - p)
        floor = self.units / self.judged if self.judged else 1.0
        if binomial <= 0:
            return 1.0
        observed = max(0.0, self.y_sq_sum / self.units - p * p)
        return min(1.0, max(floor, observed / binomial))

    @property
    def effective_n(self) -> float:
        return self.units / self.design_effect

    @property
    def interval(self) -> tuple[float, float] | None:
        """Wilson 95% interval of the rate on the effective sample size."""
        if not self.units:
            return None
        n = self.effective_n
        return wilson_interval(self.rate * n, n)

    @property
    def variance(self) -> float | None:
        """Variance of the rate for the confidence sequence: p̃(1 − p̃)/n_eff
        with p̃ = (Σy + 1)/(n + 2), so an arm of all successes early on does
        not claim zero variance."""
        if not self.units:
            return None
        p = (self.y_sum + 1) / (self.units + 2)
        return p * (1 - p) / self.effective_n

    @property
    def mean_steps(self) -> float | None:
        return self.steps_sum / self.steps_n if self.steps_n else None

    @property
    def tokens(self) -> int:
        """Prompt + completion tokens of the judged runs that reported usage."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def tokens_per_run(self) -> float | None:
        return self.tokens / self.usage_runs if self.usage_runs else None

    @property
    def prompt_tokens_per_run(self) -> float | None:
        return self.prompt_tokens / self.usage_runs if self.usage_runs else None

    @property
    def completion_tokens_per_run(self) -> float | None:
        return self.completion_tokens / self.usage_runs if self.usage_runs else None

    @property
    def memory_tokens_per_retrieval(self) -> float | None:
        return self.memory_tokens / self.memory_blocks if self.memory_blocks else None

    @property
    def success_per_1k_tokens(self) -> float | None:
        """Successes per 1,000 tokens, over the judged runs that reported usage."""
        return 1000 * self.usage_successes / self.tokens if self.usage_runs and self.tokens else None


def percent(fraction: float | None) -> float | None:
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
        return percent(self.rate)

    @property
    def low_pct(self) -> float | None:
        return percent(self.low)

    @property
    def high_pct(self) -> float | None:
        return percent(self.high)

    @property
    def needed(self) -> int:
        """How many more judged retrievals this arm needs for a verdict."""
        return max(0, MIN_UNITS - self.units)

    @property
    def report_rate(self) -> float | None:
        """Share of triggered retrievals that came back judged (the reporting guardrail)."""
        return self.units / self.triggered if self.triggered else None

    @property
    def report_pct(self) -> float | None:
        return percent(self.report_rate)
