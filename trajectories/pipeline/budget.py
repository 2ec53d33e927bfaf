"""A bank's daily LLM token budget (its trust policy's
``daily_llm_token_budget``): what is left of it today, read with the row the
stages work on, and the parking of a trajectory while it is spent — before a
stage, or when a call's hold is refused (each LLM call first holds an
estimate of its tokens: trajectories.pipeline.llm_usage). A parked
row waits in ``awaiting_llm`` (nothing is lost) and the sweeper resumes it
once its ``retry_at`` comes: at the next check, when the budget was raised
meanwhile, or after the day's reset (00:00 UTC)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django.db import transaction
from django.db.models import BigIntegerField, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from memories.trust.models import TrustPolicy
from trajectories.models import Status, Trajectory
from trajectories.pipeline.models import LLMUsage
from trajectories.pipeline.transitions import trajectory_move, trajectory_move_many

# How often a parked row looks again (a raised budget is seen within this time).
RECHECK = timedelta(minutes=5)

# Tokens left today (NULL: the bank has no budget): the budget minus today's counted prompt and completion tokens.
BUDGET_LEFT = RawSQL(
    f"(SELECT p.daily_llm_token_budget - COALESCE((SELECT SUM(u.prompt_tokens + u.completion_tokens)"
    f" FROM {LLMUsage._meta.db_table} u WHERE u.bank_id = p.bank_id"
    f" AND u.day = (now() AT TIME ZONE 'UTC')::date), 0)"
    f" FROM {TrustPolicy._meta.db_table} p"
    f' WHERE p.bank_id = "{Trajectory._meta.db_table}"."bank_id" AND p.daily_llm_token_budget IS NOT NULL)',
    (),
    output_field=BigIntegerField(),
)


def budget_is_set(t: Trajectory) -> bool:
    """Whether ``t``'s bank has a daily budget (True when ``t`` was not read by trajectory_row: ask)."""
    return getattr(t, "llm_budget_left", 0) is not None


def budget_spent(t: Trajectory) -> bool:
    """Whether ``t``'s bank has spent today's LLM token budget (``t`` read by trajectory_row)."""
    left = getattr(t, "llm_budget_left", None)
    return left is not None and left <= 0


def _next_reset(now: datetime) -> datetime:
    return datetime.combine(now.astimezone(UTC).date() + timedelta(days=1), time(), tzinfo=UTC)


def _waiting(now: datetime) -> tuple[str, datetime]:
    """The status detail of a parked row, and when it looks again."""
    reset = _next_reset(now)
    detail = (
        "This bank's daily LLM token budget is spent. The trajectory waits (nothing is lost) and resumes by "
        f"itself when the budget resets ({reset:%Y-%m-%d %H:%M} UTC) or is raised on the bank's trust page."
    )
    return detail, min(reset, now + RECHECK)


def budget_park(t: Trajectory, *, from_: str | list[str]) -> bool:
    """Park ``t`` (from status ``from_``) in ``awaiting_llm`` while its bank's budget is spent, saying so."""
    now = timezone.now()
    detail, retry_at = _waiting(now)
    if t.status == Status.AWAITING_LLM:  # parked already (a recheck): a new time to look again, no status move
        waiting = Trajectory.objects.filter(pk=t.pk, status=Status.AWAITING_LLM)
        return bool(waiting.update(status_detail=detail, retry_at=retry_at, enqueued_at=None))
    return trajectory_move(t.pk, from_=from_, to=Status.AWAITING_LLM, detail=detail, also={"retry_at": retry_at})


@transaction.atomic
def budget_park_rows(rows: QuerySet[Trajectory], *, running: str, back_to: str) -> None:
    """Park ``rows`` (those still ``running`` a stage) when the budget could not cover the stage's LLM
    call: back to ``back_to``, then in ``awaiting_llm`` (a MaTTS group stays in ``waiting_group``), each
    with a time to look again, saying so."""
    detail, retry_at = _waiting(timezone.now())
    also = {"retry_at": retry_at, "enqueued_at": None}
    trajectory_move_many(rows, from_=running, to=back_to, detail=detail, also=also)
    if back_to != Status.WAITING_GROUP:
        trajectory_move_many(rows, from_=back_to, to=Status.AWAITING_LLM, detail=detail, also=also)


def group_budget_park(ids: list[int]) -> bool:
    """When the bank of the MaTTS group members ``ids`` (waiting_group, locked by the caller) has spent its
    budget, keep them waiting with a time to look again, saying so; True when they were parked."""
    left = Trajectory.objects.filter(pk=ids[0]).annotate(left=BUDGET_LEFT).values_list("left", flat=True).first()
    if left is None or left > 0:
        return False
    detail, retry_at = _waiting(timezone.now())
    trajectory_move_many(
        Trajectory.objects.filter(pk__in=ids),
        from_=Status.WAITING_GROUP,
        to=Status.WAITING_GROUP,
        detail=detail,
        also={"retry_at": retry_at, "enqueued_at": None},
    )
    return True
