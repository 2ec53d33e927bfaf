"""The tokens each LLM call used, counted for its bank (per UTC day, stage and
model) and for the trajectories it was about. ``trajectories.pipeline.llm.chat``
calls ``llm_usage_record`` once the endpoint answered; the reads are in
``trajectories.selectors.llm_usage``.

One raw-SQL statement per call, because the ORM has no additive upsert
(``bulk_create(update_conflicts=True)`` overwrites): ``INSERT … ON CONFLICT DO
UPDATE SET n = n + EXCLUDED.n`` is atomic per row, so concurrent calls lose no
count, and it costs the pipeline one round trip per LLM call. The rows are
inserted from a SELECT of the bank and trajectories that still exist: one
deleted while the LLM answered is skipped, not an error."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection
from django.utils import timezone

from trajectories.models import LLM_MODEL_NAME_MAX

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
