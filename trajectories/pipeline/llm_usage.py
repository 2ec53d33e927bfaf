"""The tokens each LLM call used, counted for its bank (per UTC day, stage and
model) and for the trajectories it was about, and the tokens held from its
daily budget while a call is in flight. ``trajectories.pipeline.llm.chat``
holds an estimate before each call (``llm_budget_hold``: refused with
LLMBudgetSpent when the budget cannot cover it), and once the endpoint
answered replaces the hold with the real usage (``llm_usage_settle``); a
failed call drops its hold (``llm_budget_release``). The reads are in
``trajectories.dashboard.llm_usage``.

One raw-SQL statement per call, because the ORM has no additive upsert
(``bulk_create(update_conflicts=True)`` overwrites): ``INSERT … ON CONFLICT DO
UPDATE SET n = n + EXCLUDED.n`` is atomic per row, so concurrent calls lose no
count, and it costs the pipeline one round trip per LLM call. The rows are
inserted from a SELECT of the bank and trajectories that still exist: one
deleted while the LLM answered is skipped, not an error."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from memories.trust.models import TrustPolicy
from trajectories.pipeline.llm_errors import LLMBudgetSpent
from trajectories.pipeline.models import LLM_MODEL_NAME_MAX, LLMBudgetHold, LLMUsage

ADDED = """calls = {table}.calls + 1,
        prompt_tokens = {table}.prompt_tokens + EXCLUDED.prompt_tokens,
        completion_tokens = {table}.completion_tokens + EXCLUDED.completion_tokens"""
RECORD_SQL = f"""
WITH bank_usage AS (
    INSERT INTO trajectories_llmusage (bank_id, day, stage, model, calls, prompt_tokens, completion_tokens)
    SELECT id, %(day)s, %(stage)s, %(model)s, 1, %(prompt)s, %(completion)s FROM accounts_bank WHERE id = %(bank)s
    ON CONFLICT (bank_id, day, stage, model) DO UPDATE SET {ADDED.format(table="trajectories_llmusage")}
)
INSERT INTO trajectories_trajectoryllmusage (trajectory_id, stage, model, calls, prompt_tokens, completion_tokens)
SELECT id, %(stage)s, %(model)s, 1, %(prompt)s, %(completion)s
FROM trajectories_trajectory WHERE id = ANY(%(trajectories)s) ORDER BY id
ON CONFLICT (trajectory_id, stage, model) DO UPDATE SET {ADDED.format(table="trajectories_trajectoryllmusage")}
"""


def usage_tokens(usage) -> tuple[int, int]:
    """(prompt, completion) tokens of an openai ``CompletionUsage``; 0 for what the endpoint left out."""
    counts = []
    for kind in ("prompt", "completion"):
        tokens = getattr(usage, f"{kind}_tokens", None)
        counts.append(tokens if isinstance(tokens, int) and tokens > 0 else 0)
    return counts[0], counts[1]


def llm_usage_record(
    *, bank_id: int, stage: str, model: str, usage, trajectory_ids: Iterable[int] = (), day=None
) -> None:
    """Adds one call and its ``usage`` (None when the endpoint sent none: the call still counts) to the
    bank's row for ``day`` (today, UTC) and to the row of each of ``trajectory_ids`` (those that
    exist), under ``stage`` and ``model``. Database errors propagate, as any write's in the pipeline."""
    prompt, completion = usage_tokens(usage)
    params = {
        "bank": bank_id,
        "day": day or timezone.now().date(),
        "stage": stage,
        "model": model[:LLM_MODEL_NAME_MAX],
        "prompt": prompt,
        "completion": completion,
        "trajectories": sorted(set(trajectory_ids)),
    }
    with connection.cursor() as cursor:
        cursor.execute(RECORD_SQL, params)


def llm_usage_settle(*, hold: int | None, **call) -> None:
    """The call's real usage in place of its ``hold``, in one transaction (the budget never counts both or
    neither); ``call`` as for llm_usage_record."""
    if hold is None:
        llm_usage_record(**call)
        return
    with transaction.atomic():
        llm_budget_release(hold)
        llm_usage_record(**call)


# --- the daily budget's holds ---------------------------------------------------------------------------------

# A completion's tokens before it is known, by stage: what a verdict or a few items usually take.
COMPLETION_ESTIMATE = {"judge": 400, "experiment": 400, "distill": 1000, "matts": 1200}
COMPLETION_ESTIMATE_DEFAULT = 600


def llm_call_estimate(*, messages: list[dict], purpose: str) -> int:
    """The tokens a call will likely use, on the safe side: a token per 3 characters of the messages (English
    averages about 4), a few per message, and the stage's usual completion."""
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    return chars // 3 + 8 * len(messages) + COMPLETION_ESTIMATE.get(purpose, COMPLETION_ESTIMATE_DEFAULT)


def _hold_expiry() -> timedelta:
    """A hold older than this belongs to a call that can no longer answer (its worker died): not counted."""
    return timedelta(seconds=2 * float(settings.RB_LLM_TIMEOUT) + 60)


def llm_budget_hold(*, bank_id: int, tokens: int) -> int | None:
    """Hold ``tokens`` of the bank's budget for today (UTC) for one call; returns the hold's id, or None
    when the bank has no budget. Raises LLMBudgetSpent when the budget minus today's usage and the live
    holds is less than ``tokens``. The bank's policy row is locked while deciding, so two concurrent
    calls never both take the last tokens."""
    now = timezone.now()
    day = now.date()
    with transaction.atomic():
        budget = (
            TrustPolicy.objects.select_for_update()
            .filter(bank_id=bank_id, daily_llm_token_budget__isnull=False)
            .values_list("daily_llm_token_budget", flat=True)
            .first()
        )
        if budget is None:
            return None
        holds = LLMBudgetHold.objects.filter(bank_id=bank_id)
        holds.filter(created_at__lt=now - _hold_expiry()).delete()
        used = LLMUsage.objects.filter(bank_id=bank_id, day=day).aggregate(
            n=Sum("prompt_tokens") + Sum("completion_tokens")
        )["n"]
        held = holds.filter(day=day).aggregate(n=Sum("tokens"))["n"]
        left = budget - (used or 0) - (held or 0)
        if left < tokens:
            raise LLMBudgetSpent(left=left, needed=tokens)
        return LLMBudgetHold.objects.create(bank_id=bank_id, day=day, tokens=tokens).pk


def llm_budget_release(hold: int | None) -> None:
    """Drop a hold (the call failed, or its real usage is being recorded)."""
    if hold is not None:
        LLMBudgetHold.objects.filter(pk=hold).delete()
