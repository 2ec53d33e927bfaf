"""The tokens each LLM call used, counted for its bank (per UTC day, stage and
model) and for the trajectories it was about. ``trajectories.pipeline.llm.chat``
calls ``llm_usage_record`` once the endpoint answered; the reads are in
``trajectories.selectors.llm_usage``.

Counting is concurrency-safe without locks held across the call: the row is
made if missing (``INSERT … ON CONFLICT DO NOTHING``), then added to with one
``UPDATE … SET n = n + k``, which PostgreSQL serializes per row."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from trajectories.models import LLM_MODEL_NAME_MAX, LLMUsage, TrajectoryLLMUsage

log = logging.getLogger(__name__)


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
    bank's row for ``day`` (today, UTC) and to each trajectory's row. Never raises for a database
    error: a bank or trajectory deleted while the LLM answered loses only this call's count. Called
    outside any transaction, as LLM calls are (a foreign key is checked when its transaction commits)."""
    prompt, completion = usage_tokens(usage)
    model = model[:LLM_MODEL_NAME_MAX]
    added = {"calls": F("calls") + 1, "prompt_tokens": F("prompt_tokens") + prompt}
    added["completion_tokens"] = F("completion_tokens") + completion
    day = day or timezone.now().date()
    try:
        with transaction.atomic():
            LLMUsage.objects.bulk_create(
                [LLMUsage(bank_id=bank_id, day=day, stage=stage, model=model)], ignore_conflicts=True
            )
            LLMUsage.objects.filter(bank_id=bank_id, day=day, stage=stage, model=model).update(**added)
    except DatabaseError:
        log.warning("LLM usage of bank %s not counted: the bank is gone", bank_id, exc_info=True)
    ids = sorted(set(trajectory_ids))
    if not ids:
        return
    try:
        with transaction.atomic():
            TrajectoryLLMUsage.objects.bulk_create(
                [TrajectoryLLMUsage(trajectory_id=i, stage=stage, model=model) for i in ids], ignore_conflicts=True
            )
            TrajectoryLLMUsage.objects.filter(trajectory_id__in=ids, stage=stage, model=model).update(**added)
    except DatabaseError:
        log.warning("LLM usage of trajectories %s not counted: one is gone", ids, exc_info=True)
