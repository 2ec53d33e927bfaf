"""What the evaluation endpoints answer, as dataclasses (``from_dict`` ignores fields it does not
know, as in types.py). ``EvaluationTry.raw`` is the try exactly as the service sent it: what
``evaluate()`` hands the agent and ``rb eval run`` writes on the command's stdin."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reasoningbank_client.types import MemoryItem, _build, parse_datetime


@dataclass
class TaskSet:
    """A named, fixed list of evaluation tasks; ``tasks`` is filled by ``task_set(ref)`` only."""

    id: str
    name: str
    description: str = ""
    source: str = ""
    task_count: int = 0
    created_at: datetime | None = None
    filters: dict[str, Any] = field(default_factory=dict)  # the trajectory filter it was built from
    tasks: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskSet:
        return _build(
            cls,
            data,
            id=str(data["id"]),
            created_at=parse_datetime(data.get("created_at")),
            tasks=list(data.get("tasks") or []),
        )


@dataclass
class EvaluationProgress:
    """How far a run got: tries in total, recorded, claimed (being run), pending, and ``known`` (recorded
    with a known outcome: its check, or its judged verdict). ``abandoned``: open, unfinished and idle."""

    total: int = 0
    recorded: int = 0
    claimed: int = 0
    pending: int = 0
    known: int = 0
    last_activity_at: datetime | None = None
    abandoned: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> EvaluationProgress:
        data = data or {}
        return _build(cls, data, last_activity_at=parse_datetime(data.get("last_activity_at")))


@dataclass
class EvaluationArm:
    kind: str  # candidate | production | none | control
    release: int | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationArm:
        return _build(cls, data)


@dataclass
class Evaluation:
    """An evaluation run. ``results`` (the statistics and verdicts) is ``{}`` until they are computed, and
    in the list of runs; ``command`` is how to run its tries."""

    id: str
    state: str
    k: int
    note: str = ""
    task_set: dict[str, Any] = field(default_factory=dict)
    arms: list[EvaluationArm] = field(default_factory=list)
    token_budget: int | None = None
    progress: EvaluationProgress = field(default_factory=EvaluationProgress)
    results: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    finished_at: datetime | None = None
    last_activity_at: datetime | None = None
    command: str = ""

    @property
    def verdict(self) -> dict[str, Any]:
        """The results' verdict (``at_actual_cost``, ``at_equal_cost``, ``text``), ``{}`` until known."""
        return dict(self.results.get("verdict") or {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evaluation:
        return _build(
            cls,
            data,
            id=str(data["id"]),
            arms=[EvaluationArm.from_dict(a) for a in data.get("arms") or []],
            progress=EvaluationProgress.from_dict(data.get("progress")),
            results=dict(data.get("results") or {}),
            created_at=parse_datetime(data.get("created_at")),
            finished_at=parse_datetime(data.get("finished_at")),
            last_activity_at=parse_datetime(data.get("last_activity_at")),
        )


@dataclass
class EvaluationTry:
    """One try handed to the agent: its task, its arm and what the arm serves (``system_block``, ``memories``;
    empty for the no-memory arm and the control, which gets ``extra_tokens`` instead)."""

    id: str
    evaluation: str
    task: dict[str, Any]
    arm: str
    number: int
    k: int
    release: int | None = None
    memories: list[MemoryItem] = field(default_factory=list)
    system_block: str = ""
    memory_tokens: int = 0
    extra_tokens: int = 0
    token_budget: int | None = None
    lease_seconds: int = 0
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def task_key(self) -> str:
        """The task's id in its set."""
        return str(self.task.get("id", ""))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvaluationTry:
        return _build(
            cls,
            data,
            id=str(data["id"]),
            evaluation=str(data.get("evaluation", "")),
            task=dict(data.get("task") or {}),
            memories=[MemoryItem.from_dict(m) for m in data.get("memories") or []],
            raw=data,
        )


@dataclass
class NextTry:
    """The answer of ``next_try``: a try to run (``try_``), or None with ``done`` true when every try is
    recorded, false when the tries left are claimed by another harness (``message`` says so)."""

    try_: EvaluationTry | None
    done: bool
    message: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NextTry:
        attempt = data.get("try")
        return cls(
            try_=EvaluationTry.from_dict(attempt) if attempt else None,
            done=bool(data.get("done")),
            message=str(data.get("message") or ""),
        )


@dataclass
class TryRecorded:
    """The answer of ``record_try``: the try, its trajectory, the task's check on the answer (None when the
    task has no check: the trajectory's judged verdict decides) and the run's progress."""

    try_id: str
    trajectory: str
    check_passed: bool | None
    progress: EvaluationProgress

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TryRecorded:
        return cls(
            try_id=str(data.get("try", "")),
            trajectory=str(data.get("trajectory", "")),
            check_passed=data.get("check_passed"),
            progress=EvaluationProgress.from_dict(data.get("progress")),
        )


@dataclass
class TryReport:
    """What ``evaluate()`` did with one try (handed to its ``on_try`` callback): ``recorded`` is the
    service's answer (None when another harness recorded the try first), ``error`` the reason it was
    recorded as a failure (the agent raised, exited non-zero, or answered something unreadable)."""

    try_: EvaluationTry
    recorded: TryRecorded | None
    error: str | None = None


@dataclass
class EvaluationSummary:
    """What ``evaluate()`` did: ``ran`` tries handed to the agent, ``recorded`` of them recorded,
    ``failed`` of those recorded as failures by the harness (the agent raised or its answer was unreadable),
    ``already_recorded`` recorded first by another harness; ``progress`` is the run's after it, ``done``
    true when every try of the run is recorded, and ``message`` the service's word when it is not."""

    evaluation: str
    ran: int = 0
    recorded: int = 0
    failed: int = 0
    already_recorded: int = 0
    progress: EvaluationProgress = field(default_factory=EvaluationProgress)
    done: bool = False
    message: str = ""
