"""Input and output shapes of the evaluation-run API (trajectories.evaluation.api)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ninja import Field, Schema
from pydantic import BaseModel, ConfigDict

from trajectories.evaluation.models import TRIES_MAX, TRIES_MIN


class EvaluationIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "task_set": "checkout-tasks",
                    "arms": ["candidate", "production", "control"],
                    "release": 8,
                    "k": 3,
                    "token_budget": None,
                    "note": "Release 8: the login lessons reviewed",
                }
            ]
        },
    )

    task_set: str = Field(..., description="The task set's id or name.")
    arms: list[str] = Field(
        ..., description="Two or more of candidate, production, none (no memory), control (same-budget control)."
    )
    release: int | None = Field(None, description="The candidate arm's release number (required with it).")
    # Bounds are checked by the service, which names them in its message.
    k: int = Field(..., description=f"Tries per task and arm, {TRIES_MIN} to {TRIES_MAX}.")
    token_budget: int | None = Field(None, description="Every arm's token budget per try; null: none.")
    note: str = Field("", description="Why this run (≤ 500 characters).")


class ProgressOut(Schema):
    total: int
    recorded: int
    claimed: int = Field(..., description="Tries a harness has claimed and not recorded yet.")
    pending: int
    known: int = Field(..., description="Recorded tries whose outcome is known (their check, else their verdict).")
    last_activity_at: datetime | None
    abandoned: bool = Field(
        ..., description="Open, with tries left and no activity for longer than the lease: resume it."
    )


class TaskSetRefOut(Schema):
    id: UUID
    name: str


class ArmOut(Schema):
    kind: str = Field(..., examples=["candidate"])
    release: int | None = Field(..., description="The release pinned when the run was created (null: no memory).")


class EvaluationOut(Schema):
    id: UUID
    state: Literal["open", "finished", "cancelled"]
    note: str
    k: int
    task_set: TaskSetRefOut
    arms: list[ArmOut]
    token_budget: int | None
    progress: ProgressOut
    results: dict[str, Any] = Field(
        default_factory=dict, description="Statistics and verdicts (docs/evaluation.md); {} until computed."
    )
    created_at: datetime
    finished_at: datetime | None
    last_activity_at: datetime | None
    command: str = Field(..., examples=["rb eval run 3f1c… -- <your agent command>"])


class EvaluationSummaryOut(Schema):
    id: UUID
    state: str
    note: str
    k: int
    task_set: TaskSetRefOut
    arms: list[ArmOut]
    token_budget: int | None
    progress: ProgressOut
    created_at: datetime
    finished_at: datetime | None
    last_activity_at: datetime | None
    command: str


class EvaluationsOut(Schema):
    evaluations: list[EvaluationSummaryOut]


class TryTaskOut(Schema):
    id: str = Field(..., description="The task's id in its set.")
    text: str
    metadata: dict[str, Any]


class TryMemoryOut(Schema):
    id: UUID
    title: str
    description: str
    content: str
    score: float


class TryOut(Schema):
    id: UUID = Field(..., description="The try's id: record it at POST /evaluations/{id}/tries/{try id}.")
    evaluation: UUID
    task: TryTaskOut
    arm: str
    release: int | None
    number: int = Field(..., description="Which try of this task in this arm, 1 to k.")
    k: int
    memories: list[TryMemoryOut] = Field(..., description="What the arm serves (empty for none and control).")
    system_block: str = Field(..., description="The memories as a system-prompt block ('' when none).")
    memory_tokens: int = Field(..., description="The block's estimated tokens.")
    extra_tokens: int = Field(
        ..., description="The control's extra budget: the tokens of the block it was not given (0 otherwise)."
    )
    token_budget: int | None
    lease_seconds: int = Field(..., description="Record it within this long, or it is offered again.")


class NextOut(Schema):
    try_: TryOut | None = Field(..., alias="try")
    done: bool = Field(..., description="True when every try is recorded.")
    message: str


class TryResultIn(BaseModel):
    """What the team's agent did: the body of POST /trajectories without its task (the try's)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "steps": [{"thought": "Open the orders page.", "action": "click('Orders')", "observation": "…"}],
                    "final_answer": "Order 1042 shipped on May 3.",
                    "usage": {"prompt_tokens": 5230, "completion_tokens": 410},
                }
            ]
        },
    )

    steps: list[Any] | None = None
    messages: list[Any] | None = None
    system: Any = None
    final_answer: Any = ""
    outcome: Any = None
    usage: Any = None
    metadata: Any = None


class TryRecordedOut(Schema):
    try_: UUID = Field(..., alias="try")
    trajectory: UUID
    check_passed: bool | None = Field(..., description="The task's check on the final answer; null: no check.")
    progress: ProgressOut
