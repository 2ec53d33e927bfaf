"""The evaluation-run API: thin adapters over trajectories.evaluation.runs and .attempts.

A reviewer's tool (scope ``review``) creates, lists and cancels runs; the harness (``rb eval run``,
scope ``ingest``) claims the next try and records what the team's agent did; any live token of the
bank reads a run."""

from __future__ import annotations

from django.conf import settings
from ninja import Query, Router, Status

from accounts.tokens.auth import TokenAuth, api_responses
from trajectories.evaluation.attempts import try_claim, try_record
from trajectories.evaluation.models import EvalArm, EvalRun, RunState
from trajectories.evaluation.run_schemas import (
    EvaluationIn,
    EvaluationOut,
    EvaluationsOut,
    NextOut,
    TryRecordedOut,
    TryResultIn,
)
from trajectories.evaluation.runs import (
    evaluation_cancel,
    evaluation_command,
    evaluation_create,
    evaluation_lookup,
    evaluation_progress,
    evaluation_progress_many,
    task_set_for_run,
)

router = Router(tags=["evaluations"])
LIST_LIMIT = 100
STATE_FILTER = Query(None, description="open, finished or cancelled.")


def _arms(run: EvalRun) -> list[dict]:
    arms = getattr(run, "arm_rows", None) or list(EvalArm.objects.filter(run=run).select_related("release"))
    return [{"kind": a.kind, "release": a.release.number if a.release else None} for a in arms]


def _evaluation(run: EvalRun, progress: dict, *, results: bool = True) -> dict:
    body = {
        "id": run.public_id,
        "state": run.state,
        "note": run.note,
        "k": run.k,
        "task_set": {"id": run.task_set.public_id, "name": run.task_set.name},
        "arms": _arms(run),
        "token_budget": run.token_budget,
        "progress": progress,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "last_activity_at": run.last_activity_at,
        "command": evaluation_command(run),
    }
    if results:
        body["results"] = run.results or {}
    return body


@router.post(
    "/evaluations",
    auth=TokenAuth(scope="review"),
    response=api_responses({201: EvaluationOut}),
    summary="Create an evaluation run",
    description=(
        "Plans every try of `task_set` (tasks × arms × k) and answers the run, with the command that works "
        "through its tries (`rb eval run <id> -- <your agent command>`); subscribers of `evaluation.started` "
        "are told. 422 for k outside 1..20, unknown, repeated or fewer than two arms, a candidate without a "
        "release or with one the bank lacks (`unknown_release`), a production arm in a bank without production, "
        "an unknown or empty task set, or more than RB_EVAL_MAX_TRIES tries."
    ),
)
def evaluation_create_endpoint(request, payload: EvaluationIn):
    run = evaluation_create(
        bank=request.bank,
        task_set=task_set_for_run(bank=request.bank, ref=payload.task_set),
        arms=payload.arms,
        release=payload.release,
        k=payload.k,
        token_budget=payload.token_budget,
        note=payload.note,
        token=request.api_token,
    )
    run = evaluation_lookup(bank=request.bank, ref=run.public_id)
    return Status(201, _evaluation(run, evaluation_progress(run)))


@router.get(
    "/evaluations",
    auth=TokenAuth(scope="review"),
    response=api_responses({200: EvaluationsOut}),
    summary="The bank's evaluation runs, newest first (without their results)",
)
def evaluations_list(request, state: RunState | None = STATE_FILTER):
    runs = EvalRun.objects.filter(bank=request.bank).select_related("task_set")
    if state:
        runs = runs.filter(state=state)
    runs = list(runs.order_by("-created_at")[:LIST_LIMIT])
    arms: dict[int, list[EvalArm]] = {}
    for arm in EvalArm.objects.filter(run__in=runs).select_related("release"):
        arms.setdefault(arm.run_id, []).append(arm)
    progress = evaluation_progress_many(runs)
    for run in runs:
        run.arm_rows = arms.get(run.pk, [])
    return {"evaluations": [_evaluation(run, progress[run.pk], results=False) for run in runs]}


@router.get(
    "/evaluations/{evaluation_id}",
    auth=TokenAuth(scope=None),
    response=api_responses({200: EvaluationOut}, 404),
    url_name="evaluation_detail",
    summary="An evaluation run: its arms, progress and results",
)
def evaluation_detail(request, evaluation_id: str):
    run = evaluation_lookup(bank=request.bank, ref=evaluation_id)
    return _evaluation(run, evaluation_progress(run))


@router.post(
    "/evaluations/{evaluation_id}/next",
    auth=TokenAuth(scope="ingest"),
    response=api_responses({200: NextOut}, 404, 409),
    by_alias=True,
    summary="Claim the run's next try",
    description=(
        "The next try to run: the task, the arm, and what the arm serves (memories and system block; the "
        "control: no memories and `extra_tokens`, the tokens of the block it was not given). A claim not "
        "recorded within `lease_seconds` is offered again, so `rb eval run <id>` resumes an abandoned run. "
        "`try` is null when nothing is left to claim; `done` is true when every try is recorded. 409 "
        "`evaluation_finished` for a cancelled run."
    ),
)
def evaluation_next(request, evaluation_id: str):
    run = evaluation_lookup(bank=request.bank, ref=evaluation_id)
    attempt = try_claim(run=run, token=request.api_token)
    if attempt is None:
        run.refresh_from_db(fields=["state", "tries_recorded"])
        progress = evaluation_progress(run)
        done = run.state == RunState.FINISHED
        message = (
            "Every try is recorded."
            if done
            else f"No try to claim now: {progress['claimed']} claimed by a harness, offered again if not "
            f"recorded within {settings.RB_EVAL_LEASE_SECONDS} s."
        )
        return {"try": None, "done": done, "message": message}
    task, arm = attempt.task, attempt.arm
    offered = {
        "id": attempt.public_id,
        "evaluation": run.public_id,
        "task": {"id": task.key, "text": task.text, "metadata": task.metadata or {}},
        "arm": arm.kind,
        "release": arm.release.number if arm.release else None,
        "number": attempt.number,
        "k": run.k,
        "memories": attempt.memories,
        "system_block": attempt.system_block,
        "memory_tokens": attempt.memory_tokens,
        "extra_tokens": attempt.extra_tokens,
        "token_budget": run.token_budget,
        "lease_seconds": settings.RB_EVAL_LEASE_SECONDS,
    }
    return {"try": offered, "done": False, "message": f"Try {attempt.number} of task {task.key!r} in arm {arm.kind}."}


@router.post(
    "/evaluations/{evaluation_id}/tries/{try_id}",
    auth=TokenAuth(scope="ingest"),
    response=api_responses({201: TryRecordedOut}, 404, 409, 413),
    by_alias=True,
    summary="Record a try",
    description=(
        "What the agent did, shaped like the body of POST /trajectories without `task` (the try's): `steps` or "
        "`messages`, `final_answer`, `outcome`, `usage` {prompt_tokens, completion_tokens}, `metadata`. Stored "
        "as a trajectory that is judged, never distilled. 409 `evaluation_finished` when the run is not open, "
        "`try_recorded` when the try was recorded already; nothing changes on any error."
    ),
)
def evaluation_try_record(request, evaluation_id: str, try_id: str, payload: TryResultIn):
    run = evaluation_lookup(bank=request.bank, ref=evaluation_id)
    attempt = try_record(
        run=run, try_id=try_id, payload=payload.model_dump(exclude_unset=True), token=request.api_token
    )
    run.refresh_from_db()
    body = {
        "try": attempt.public_id,
        "trajectory": attempt.trajectory.public_id,
        "check_passed": attempt.check_passed,
        "progress": evaluation_progress(run),
    }
    return Status(201, body)


@router.post(
    "/evaluations/{evaluation_id}/cancel",
    auth=TokenAuth(scope="review"),
    response=api_responses({200: EvaluationOut}, 404, 409),
    summary="Cancel an evaluation run",
    description="Its remaining tries are never offered and later records are refused (409). 409 for a finished run.",
)
def evaluation_cancel_endpoint(request, evaluation_id: str):
    run = evaluation_cancel(run=evaluation_lookup(bank=request.bank, ref=evaluation_id), token=request.api_token)
    return _evaluation(run, evaluation_progress(run))
