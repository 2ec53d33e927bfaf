"""Reads of the LLM tokens counted by trajectories.pipeline.llm_usage: a bank's
last days per stage and per day (the dashboard's panel), one trajectory's per
stage and model (its page), today's tokens and their cost (the trust page, beside the
daily budget it counts against), and every bank's totals (/metrics). Costs are
estimated here, with the current prices (trajectories.pipeline.llm_prices)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from accounts.models import Bank
from trajectories.models import Trajectory
from trajectories.pipeline.llm import distill_model_for, judge_model_for
from trajectories.pipeline.llm_prices import llm_cost
from trajectories.pipeline.models import LLMStage, LLMUsage, TrajectoryLLMUsage

USAGE_DAYS = 30


@dataclass
class UsageLine:
    """Calls and tokens summed over some rows, and their estimated cost: the sum over the models
    with a price; ``unpriced`` names the models without one (their cost is unknown, not 0)."""

    label: str
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    priced_cost: float = 0.0
    priced_tokens: int = 0
    unpriced: set[str] = field(default_factory=set)

    def add(self, *, model: str, calls: int, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls += calls
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        cost = llm_cost(model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        if cost is None:
            if prompt_tokens or completion_tokens:
                self.unpriced.add(model)
        else:
            self.priced_cost += cost
            self.priced_tokens += prompt_tokens + completion_tokens

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost(self) -> float | None:
        """The estimated cost in USD, or None when some of the tokens have no price."""
        return None if self.unpriced else self.priced_cost

    @property
    def cost_text(self) -> str:
        """ "$0.42"; "≥ $0.42" when some tokens have no price; "unknown" when none has one."""
        money = f"${self.priced_cost:,.4f}" if self.priced_cost < 1 else f"${self.priced_cost:,.2f}"
        if not self.unpriced:
            return money
        return f"≥ {money}" if self.priced_tokens else "unknown"


@dataclass
class BankUsage:
    period_days: int
    since: date
    stages: list[UsageLine]  # the stages with calls, in LLMStage order
    days: list[UsageLine]  # the days with calls, newest first
    total: UsageLine

    @property
    def unpriced(self) -> list[str]:
        return sorted(self.total.unpriced)


def bank_llm_usage(*, bank: Bank, days: int = USAGE_DAYS) -> BankUsage:
    """The bank's LLM calls of the last ``days`` UTC days (today included), per stage and per day. One query."""
    since = timezone.now().date() - timedelta(days=days - 1)
    rows = (
        LLMUsage.objects.filter(bank=bank, day__gte=since)
        .values_list("day", "stage", "model", "calls", "prompt_tokens", "completion_tokens")
        .order_by()
    )
    stages = {value: UsageLine(label) for value, label in LLMStage.choices}
    by_day: dict[date, UsageLine] = {}
    total = UsageLine("Total")
    for day, stage, model, calls, prompt, completion in rows:
        counts = {"model": model, "calls": calls, "prompt_tokens": prompt, "completion_tokens": completion}
        stages.setdefault(stage, UsageLine(stage)).add(**counts)
        by_day.setdefault(day, UsageLine(day.isoformat())).add(**counts)
        total.add(**counts)
    return BankUsage(
        period_days=days,
        since=since,
        stages=[line for line in stages.values() if line.calls],
        days=[by_day[day] for day in sorted(by_day, reverse=True)],
        total=total,
    )


def trajectory_llm_usage(*, trajectory: Trajectory) -> tuple[list[UsageLine], UsageLine]:
    """The LLM calls about ``trajectory``, one line per stage and model, and their total."""
    labels = dict(LLMStage.choices)
    lines, total = [], UsageLine("Total")
    rows = TrajectoryLLMUsage.objects.filter(trajectory=trajectory).order_by("stage", "model")
    for row in rows.values_list("stage", "model", "calls", "prompt_tokens", "completion_tokens"):
        stage, model, calls, prompt, completion = row
        counts = {"model": model, "calls": calls, "prompt_tokens": prompt, "completion_tokens": completion}
        line = UsageLine(f"{labels.get(stage, stage)} · {model}")
        line.add(**counts)
        lines.append(line)
        total.add(**counts)
    return lines, total


@dataclass(frozen=True)
class BankStageUsage:
    bank: str  # "team-slug/bank-slug"
    stage: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None  # of the models with a price; None when none of them has one


def llm_usage_by_bank() -> list[BankStageUsage]:
    """Every bank's tokens since counting began, per stage (one query, grouped in the database)."""
    rows = (
        LLMUsage.objects.values_list("bank__team__slug", "bank__slug", "stage", "model")
        .annotate(prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"))
        .order_by("bank__team__slug", "bank__slug", "stage")
    )
    sums: dict[tuple[str, str], list] = {}
    for team, bank, stage, model, prompt, completion in rows:
        entry = sums.setdefault((f"{team}/{bank}", stage), [0, 0, None])
        entry[0] += prompt
        entry[1] += completion
        cost = llm_cost(model=model, prompt_tokens=prompt, completion_tokens=completion)
        if cost is not None:
            entry[2] = (entry[2] or 0.0) + cost
    return [BankStageUsage(bank, stage, p, c, cost) for (bank, stage), (p, c, cost) in sums.items()]


@dataclass(frozen=True)
class BudgetDay:
    """What the trust page says beside a bank's daily token budget: today's tokens and their cost, and what
    the whole budget costs spent on the bank's models (all prompt tokens at the cheapest input price to all
    completion tokens at the dearest output price); None when a model has no configured price."""

    today: UsageLine
    models: list[str]
    unpriced: list[str]  # the bank's models, and today's, with no price in RB_LLM_PRICES
    budget_low: float | None
    budget_high: float | None


def llm_budget_day(*, bank: Bank, budget: int | None) -> BudgetDay:
    """Today's (UTC: what the daily budget counts) LLM usage of ``bank`` with its cost, and the cost of
    ``budget`` tokens on its models. One query for the usage."""
    today = UsageLine("Today")
    rows = LLMUsage.objects.filter(bank=bank, day=timezone.now().date()).values_list(  # now() is UTC
        "model", "calls", "prompt_tokens", "completion_tokens"
    )
    for model, calls, prompt, completion in rows:
        today.add(model=model, calls=calls, prompt_tokens=prompt, completion_tokens=completion)
    models = sorted({judge_model_for(bank), distill_model_for(bank)})
    prices = [settings.RB_LLM_PRICES.get(model) for model in models]
    unpriced = sorted(today.unpriced | {m for m, p in zip(models, prices, strict=True) if p is None})
    low = high = None
    if budget and all(prices):
        low = budget * min(p["input"] for p in prices) / 1_000_000
        high = budget * max(p["output"] for p in prices) / 1_000_000
    return BudgetDay(today=today, models=models, unpriced=unpriced, budget_low=low, budget_high=high)
