"""The trajectory.needs_attention webhook event: which moves announce it and
what a receiver is told."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.db.models import QuerySet

from accounts.models import Bank
from accounts.webhooks.events import bank_webhook_data
from accounts.webhooks.subscriptions import webhook_events_emit
from reasoningbank_site.text import cut_text
from trajectories.models import Status, Trajectory

TASK_CHARS = 1000


def _payloads(bank_id: int, trajectory_ids: list[int], detail: str) -> list[dict]:
    bank = Bank.objects.select_related("team").get(pk=bank_id)
    rows = Trajectory.objects.filter(pk__in=trajectory_ids).order_by("pk").values("public_id", "task", "external_id")
    return [
        {
            "bank": bank_webhook_data(bank),
            "trajectory": {
                "id": str(row["public_id"]),
                "external_id": row["external_id"],
                "task": cut_text(row["task"], TASK_CHARS),
                "status": Status.NEEDS_ATTENTION.value,
                "detail": detail,
            },
        }
        for row in rows
    ]


def needs_attention_move(rows: QuerySet[Trajectory], values: dict) -> int:
    """Update ``rows`` (already filtered to the move's sources) with
    ``values`` (a move to needs_attention, whose ``status_detail`` is the
    reason) and emit trajectory.needs_attention for those that were not in it
    already (a restated reason is not announced again). Returns how many moved."""
    with transaction.atomic():
        before = list(rows.select_for_update().values_list("pk", "bank_id", "status"))
        if not before:
            return 0
        moved = Trajectory.objects.filter(pk__in=[pk for pk, _, _ in before]).update(**values)
        fresh: dict[int, list[int]] = defaultdict(list)
        for pk, bank_id, status in before:
            if status != Status.NEEDS_ATTENTION:
                fresh[bank_id].append(pk)
        detail = values.get("status_detail", "")
        for bank_id, ids in fresh.items():
            webhook_events_emit(
                bank_id=bank_id,
                event="trajectory.needs_attention",
                payloads=lambda bank_id=bank_id, ids=ids: _payloads(bank_id, ids, detail),
            )
    return moved
