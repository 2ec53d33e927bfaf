"""The task-set API (scope ``review``): a bank's named sets of evaluation tasks, built from its
reviewed trajectories or uploaded as JSON Lines."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from ninja import Field, Router, Schema, Status

from accounts.tokens.auth import TokenAuth, api_responses
from memories.serving.schemas import BodyIn
from reasoningbank_site.errors import TooLarge
from reasoningbank_site.request_body import body_within
from trajectories.evaluation import tasksets
from trajectories.evaluation.models import TaskSet
from trajectories.evaluation.taskset_lines import UPLOAD_MAX_BYTES

router = Router(tags=["evaluation"])
auth = TokenAuth(scope="review")


class TaskSetOut(Schema):
    id: UUID
    name: str = Field(..., examples=["checkout tasks"])
    description: str = ""
    source: str = Field(..., description="trajectories (built from a filter) or upload.")
    task_count: int
    created_at: datetime


class TaskOut(Schema):
    id: str = Field(..., description="The task's id in the set.")
    task: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    check: dict[str, Any] | None = Field(
        None, description='{"type": "contains" | "equals" | "regex", "value", "ignore_case"}'
    )
    task_id: str = Field("", description="The task id whose lessons are never served for this task.")
    trajectory: UUID | None = Field(None, description="The past trajectory it was taken from.")


class TaskSetDetailOut(TaskSetOut):
    filters: dict[str, Any] = Field(default_factory=dict, description="The trajectory filter it was built from.")
    tasks: list[TaskOut]


class TaskSetsOut(Schema):
    task_sets: list[TaskSetOut]


class TaskSetDeletedOut(Schema):
    id: UUID
    name: str
    deleted: bool = True


class TaskSetIn(BodyIn):
    name: str = Field(..., examples=["checkout tasks"])
    description: str = ""
    filters: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            'outcome ("success" | "failure" | "any"), agent, text, date_from, date_to (YYYY-MM-DD), '
            "limit (1–500, default 50), any_verdict (default false: human-reviewed outcomes only)."
        ),
        examples=[{"outcome": "any", "agent": "web-agent", "limit": 50}],
    )


def _out(task_set: TaskSet) -> dict:
    return {
        "id": task_set.public_id,
        "name": task_set.name,
        "description": task_set.description,
        "source": task_set.source,
        "task_count": task_set.task_count,
        "created_at": task_set.created_at,
    }


def _detail_out(task_set: TaskSet) -> dict:
    tasks = task_set.tasks.select_related("trajectory").only(
        "key", "text", "metadata", "success_check", "task_id", "position", "trajectory__public_id"
    )
    return {
        **_out(task_set),
        "filters": task_set.filters,
        "tasks": [
            {
                "id": t.key,
                "task": t.text,
                "metadata": t.metadata,
                "check": t.success_check,
                "task_id": t.task_id,
                "trajectory": t.trajectory.public_id if t.trajectory else None,
            }
            for t in tasks
        ],
    }


@router.post(
    "/task-sets",
    auth=auth,
    response=api_responses({201: TaskSetOut}, 409, 413),
    summary="Build a task set from trajectories",
)
def task_sets_create(request, payload: TaskSetIn):
    """One task per distinct task among the bank's trajectories the filter selects, newest first:
    by default only those whose outcome a human reviewed. 422 ``no_tasks`` when it selects none;
    409 ``name_taken`` when the bank has a task set of that name."""
    task_set = tasksets.task_set_from_trajectories(
        bank=request.bank, name=payload.name, description=payload.description, filters=payload.filters
    )
    return Status(201, _out(task_set))


@router.post(
    "/task-sets/upload",
    auth=auth,
    response=api_responses({201: TaskSetOut}, 409, 413),
    summary="Upload a task set (JSON Lines)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": 'One task per line: {"id", "task", "metadata"?, "check"?, "task_id"?}.',
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
def task_sets_upload(request, name: str, description: str = ""):
    """All or nothing: a bad line (not JSON, not an object, no id or task, a duplicate id, a bad check)
    answers 422 with ``errors`` = [{"line", "message"}] naming every bad line; over 2,000 tasks is a
    422 too, and a file over 5 MiB a 413."""
    body = body_within(
        request,
        limit=UPLOAD_MAX_BYTES,
        too_large=lambda size: TooLarge(
            f"A task set file is at most {UPLOAD_MAX_BYTES // (1024 * 1024)} MiB; this one is {size:,} bytes."
        ),
    )
    task_set = tasksets.task_set_upload(bank=request.bank, name=name, description=description, body=body)
    return Status(201, _out(task_set))


@router.get("/task-sets", auth=auth, response=api_responses({200: TaskSetsOut}), summary="The bank's task sets")
def task_sets_list(request):
    """Newest first, without their tasks."""
    return {"task_sets": [_out(t) for t in TaskSet.objects.filter(bank=request.bank).order_by("-created_at")]}


@router.get(
    "/task-sets/{task_set_id}", auth=auth, response=api_responses({200: TaskSetDetailOut}, 404), summary="One task set"
)
def task_sets_get(request, task_set_id: str):
    """By id or name, with its tasks in order."""
    return _detail_out(tasksets.task_set_lookup(bank=request.bank, ref=task_set_id))


@router.delete(
    "/task-sets/{task_set_id}",
    auth=auth,
    response=api_responses({200: TaskSetDeletedOut}, 404, 409),
    summary="Delete a task set",
)
def task_sets_delete(request, task_set_id: str):
    """The set and its tasks. 409 ``task_set_in_use`` while an evaluation run uses it (its results need
    its tasks)."""
    task_set = tasksets.task_set_lookup(bank=request.bank, ref=task_set_id)
    tasksets.task_set_delete(task_set=task_set)
    return {"id": task_set.public_id, "name": task_set.name, "deleted": True}
