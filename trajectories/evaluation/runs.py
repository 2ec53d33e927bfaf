"""Evaluation runs: created with every try planned, looked up, followed and cancelled.

A run is planned in full when it is created (one EvalAttempt per task, arm and try, inserted at
once) in the order the harness claims them: try 1 of every task in every arm, then try 2, and so
on, so a run stopped halfway is still balanced across arms and tasks."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import ApiToken, Bank
from accounts.webhooks.events import bank_webhook_data
from accounts.webhooks.subscriptions import webhook_events_emit
from memories.releases.models import Release, ReleaseEvaluation
from reasoningbank_site.errors import Conflict, Invalid, NotFound
from reasoningbank_site.text import counted
from trajectories.evaluation.models import (
    TRIES_MAX,
    TRIES_MIN,
    ArmKind,
    AttemptState,
    EvalArm,
    EvalAttempt,
    EvalRun,
    EvalTask,
    RunState,
    TaskSet,
)
from trajectories.evaluation.refresh import evaluation_results_refresh_later
from trajectories.evaluation.tasksets import task_set_lookup
from trajectories.models import Label

NOTE_MAX = 500
TOKEN_BUDGET_MAX = 10_000_000


def evaluation_command(run: EvalRun) -> str:
    """What a team runs to work through ``run``'s tries with its own agent."""
    return f"rb eval run {run.public_id} -- <your agent command>"


def _uuid(ref) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(ref))
    except ValueError:
        return None


def task_set_for_run(*, bank: Bank, ref: str) -> TaskSet:
    """The task set ``ref`` (its id, else its name) of ``bank``, as task_set_lookup finds it. Raises
    Invalid naming it when the bank has no such set (the set is a field of the run's body, not its
    path; another bank's sets included: never leak existence)."""
    try:
        return task_set_lookup(bank=bank, ref=str(ref or ""))
    except NotFound:
        raise Invalid(
            f"task_set: this bank has no task set {str(ref or '').strip()!r} (give its id or name).",
            code="unknown_task_set",
        ) from None


def _arms_checked(arms: list[str]) -> list[str]:
    kinds = [str(a).strip() for a in arms or []]
    unknown = [a for a in kinds if a not in ArmKind.values]
    if unknown:
        raise Invalid(
            f"arms: unknown arm {', '.join(map(repr, unknown))}; choose from {', '.join(ArmKind.values)}.",
            code="unknown_arm",
        )
    repeated = sorted({a for a in kinds if kinds.count(a) > 1})
    if repeated:
        raise Invalid(f"arms: {', '.join(map(repr, repeated))} is named more than once.", code="duplicate_arm")
    if len(kinds) < 2:
        raise Invalid("arms: a run compares at least two arms, e.g. ['candidate', 'production'].", code="too_few_arms")
    return kinds


def _pinned_releases(*, bank: Bank, kinds: list[str], release: int | None) -> dict[str, Release | None]:
    """Each arm's release, pinned now: the candidate's (``release``), the one production serves."""
    pinned: dict[str, Release | None] = dict.fromkeys(kinds)
    if ArmKind.CANDIDATE in kinds:
        if release is None:
            raise Invalid("release: the candidate arm needs the number of the release to evaluate.", code="no_release")
        pinned[ArmKind.CANDIDATE] = Release.objects.filter(bank=bank, number=release).first()
        if pinned[ArmKind.CANDIDATE] is None:
            raise Invalid(
                f"release: this bank has no release {release}; publish it first or name an existing one.",
                code="unknown_release",
            )
    elif release is not None:
        raise Invalid("release: only the candidate arm takes a release; add 'candidate' to arms.", code="no_candidate")
    if ArmKind.PRODUCTION in kinds:
        number = bank.release_production
        pinned[ArmKind.PRODUCTION] = Release.objects.filter(bank=bank, number=number).first() if number else None
        if pinned[ArmKind.PRODUCTION] is None:
            raise Invalid(
                "arms: the bank has no production release yet, so there is no 'production' arm to compare with.",
                code="no_production_release",
            )
    return pinned


def _evaluation_data(run: EvalRun, arms: list[EvalArm]) -> dict:
    return {
        "id": str(run.public_id),
        "task_set": {"id": str(run.task_set.public_id), "name": run.task_set.name},
        "arms": [{"kind": a.kind, "release": a.release.number if a.release else None} for a in arms],
        "k": run.k,
        "tries": run.tries_total,
        "token_budget": run.token_budget,
        "note": run.note,
    }


@transaction.atomic
def evaluation_create(
    *,
    bank: Bank,
    task_set: TaskSet,
    arms: list[str],
    release: int | None,
    k: int,
    token_budget: int | None = None,
    note: str = "",
    actor=None,
    token: ApiToken | None = None,
) -> EvalRun:
    """Create an open run of ``task_set`` comparing ``arms``, ``k`` tries per task and arm, with
    every try planned (claimed try 1 of every task and arm first, then try 2…). The candidate arm
    is pinned to release ``release``, production to the release production serves now. Records a
    ReleaseEvaluation for the candidate, audits the creation and sends ``evaluation.started`` to the
    bank's webhooks once committed. Raises Invalid (nothing written) for k outside 1..20, unknown,
    repeated or fewer than two arms, a candidate without a release or with one the bank lacks, a
    production arm in a bank without production, a task set of another bank or without tasks, a
    token budget outside 1..10,000,000, a note over 500 characters, or more tries than
    RB_EVAL_MAX_TRIES."""
    if isinstance(k, bool) or not isinstance(k, int) or not TRIES_MIN <= k <= TRIES_MAX:
        raise Invalid(f"k: tries per task must be between {TRIES_MIN} and {TRIES_MAX} (got {k!r}).", code="invalid_k")
    kinds = _arms_checked(arms)
    if token_budget is not None and not 1 <= token_budget <= TOKEN_BUDGET_MAX:
        raise Invalid(f"token_budget: between 1 and {TOKEN_BUDGET_MAX:,} tokens per try, or null (none).")
    note = (note or "").strip()
    if len(note) > NOTE_MAX:
        raise Invalid(f"note: at most {NOTE_MAX} characters (got {len(note)}).")
    if task_set.bank_id != bank.pk:
        raise Invalid("task_set: this bank has no such task set.", code="unknown_task_set")
    pinned = _pinned_releases(bank=bank, kinds=kinds, release=release)
    tasks = list(EvalTask.objects.filter(task_set=task_set).order_by("position", "id").only("pk"))
    if not tasks:
        raise Invalid(f"task_set: {task_set.name!r} has no tasks to run.", code="empty_task_set")
    total = len(tasks) * len(kinds) * k
    if total > settings.RB_EVAL_MAX_TRIES:
        raise Invalid(
            f"The run would plan {total:,} tries ({counted(len(tasks), 'task')} × {len(kinds)} arms × k={k}); "
            f"the limit is {settings.RB_EVAL_MAX_TRIES:,} (RB_EVAL_MAX_TRIES). Use a smaller set, fewer arms or a smaller k.",
            code="too_many_tries",
        )
    run = EvalRun.objects.create(
        bank=bank,
        task_set=task_set,
        note=note,
        k=k,
        token_budget=token_budget,
        tries_total=total,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
        token=token,
    )
    arm_rows = EvalArm.objects.bulk_create(
        [EvalArm(run=run, kind=kind, release=pinned[kind], position=i) for i, kind in enumerate(kinds)]
    )
    EvalAttempt.objects.bulk_create(
        [
            EvalAttempt(run=run, arm=arm, task=task, number=number)
            for number in range(1, k + 1)
            for task in tasks
            for arm in arm_rows
        ],
        batch_size=2000,
    )
    if pinned.get(ArmKind.CANDIDATE) is not None:
        ReleaseEvaluation.objects.create(release=pinned[ArmKind.CANDIDATE], run=run.public_id)
    data = _evaluation_data(run, arm_rows)
    audit_record(action=AuditAction.EVALUATION_CREATE, bank=bank, user=actor, token=token, obj=run, after=data)
    webhook_events_emit(
        bank_id=bank.pk,
        event="evaluation.started",
        payloads=lambda: [{"bank": bank_webhook_data(bank), "evaluation": data, "command": evaluation_command(run)}],
    )
    return run


def evaluation_lookup(*, bank: Bank, ref) -> EvalRun:
    """The run ``ref`` (its public id) of ``bank``, with its task set. Raises NotFound otherwise
    (another bank's runs included)."""
    key = _uuid(ref)
    run = EvalRun.objects.select_related("task_set", "bank").filter(bank=bank, public_id=key).first() if key else None
    if run is None:
        raise NotFound("No such evaluation run in this bank.")
    return run


def _known_q() -> Q:
    return Q(state=AttemptState.RECORDED) & (Q(check_passed__isnull=False) | Q(trajectory__verdict__in=Label.values))


def evaluation_progress_many(runs: list[EvalRun]) -> dict[int, dict]:
    """evaluation_progress of each of ``runs`` (one query), by the run's primary key."""
    rows = (
        EvalAttempt.objects.filter(run__in=[r.pk for r in runs])
        .values("run_id")
        .annotate(
            pending=Count("id", filter=Q(state=AttemptState.PENDING)),
            claimed=Count("id", filter=Q(state=AttemptState.CLAIMED)),
            recorded=Count("id", filter=Q(state=AttemptState.RECORDED)),
            known=Count("id", filter=_known_q()),
        )
    )
    counts = {row["run_id"]: row for row in rows}
    lease = timedelta(seconds=settings.RB_EVAL_LEASE_SECONDS)
    now = timezone.now()
    found = {}
    for run in runs:
        row = counts.get(run.pk, {})
        recorded = row.get("recorded", 0)
        last = run.last_activity_at or run.created_at
        found[run.pk] = {
            "total": run.tries_total,
            "recorded": recorded,
            "claimed": row.get("claimed", 0),
            "pending": row.get("pending", 0),
            "known": row.get("known", 0),
            "last_activity_at": run.last_activity_at,
            "abandoned": run.state == RunState.OPEN and recorded < run.tries_total and last < now - lease,
        }
    return found


def evaluation_progress(run: EvalRun) -> dict:
    """How far ``run`` got: ``total`` tries, ``recorded``, ``claimed`` (a harness has them),
    ``pending``, ``known`` (recorded with a known outcome: its check, else its verdict),
    ``last_activity_at`` and ``abandoned`` (open, tries left, and no claim or record for longer
    than the lease: ``rb eval run <id>`` resumes it, expired claims first)."""
    return evaluation_progress_many([run])[run.pk]


@transaction.atomic
def evaluation_cancel(*, run: EvalRun, actor=None, token: ApiToken | None = None) -> EvalRun:
    """Stop ``run``: its remaining tries are never offered, and a try recorded later is refused
    (409). Audited; its results are refreshed from what was recorded. Cancelling a cancelled run
    changes nothing. Raises Conflict ``evaluation_finished`` for a finished run."""
    locked = EvalRun.objects.select_for_update().select_related("task_set", "bank").get(pk=run.pk)
    if locked.state == RunState.CANCELLED:
        return locked
    if locked.state == RunState.FINISHED:
        raise Conflict("This evaluation run is finished: every try is recorded.", code="evaluation_finished")
    now = timezone.now()
    locked.state, locked.finished_at = RunState.CANCELLED, now
    locked.save(update_fields=["state", "finished_at"])
    summary = f"Cancelled after {locked.tries_recorded} of {locked.tries_total} tries."
    ReleaseEvaluation.objects.filter(run=locked.public_id).update(summary=summary, finished_at=now)
    audit_record(
        action=AuditAction.EVALUATION_CANCEL,
        bank=locked.bank,
        user=actor,
        token=token,
        obj=locked,
        before={"state": RunState.OPEN},
        after={"state": RunState.CANCELLED, "recorded": locked.tries_recorded, "total": locked.tries_total},
    )
    evaluation_results_refresh_later(run_ids=[locked.pk])
    return locked
