"""Evaluation runs built through the ORM for the page tests (views and browser): a task set, a run with
its arms and every try, and results in the shape trajectories.evaluation.verdicts writes, computed here
from per-task outcomes so the numbers on a page can be checked against what was put in."""

from __future__ import annotations

import random
from math import comb

from django.utils import timezone

from memories.releases.models import Release
from trajectories.evaluation.models import (
    ArmKind,
    AttemptState,
    EvalArm,
    EvalAttempt,
    EvalRun,
    EvalTask,
    RunState,
    TaskSet,
)

# Tokens per try an arm spends in these runs (the control gets the memory block's tokens as extra).
TOKENS = {"candidate": 2400.0, "production": 2300.0, "none": 1900.0, "control": 2350.0}
SUCCESS = {"candidate": 0.8, "production": 0.55, "none": 0.45, "control": 0.5}


def make_task_set(bank, *, tasks: int = 12, name: str = "checkout tasks") -> TaskSet:
    task_set = TaskSet.objects.create(bank=bank, name=name, source="upload", task_count=tasks)
    EvalTask.objects.bulk_create(
        [
            EvalTask(
                task_set=task_set, key=f"task-{i:02d}", text=f"Buy item {i} and report the order number", position=i
            )
            for i in range(tasks)
        ]
    )
    return task_set


def make_release(bank, number: int) -> Release:
    return Release.objects.create(bank=bank, number=number, note=f"release {number}")


def make_run(
    bank,
    task_set: TaskSet,
    *,
    kinds=("candidate", "production", "none", "control"),
    k: int = 3,
    state: str = RunState.FINISHED,
    releases: dict | None = None,
    note: str = "Release 3 before publishing",
) -> EvalRun:
    """A run with its arms and every try planned (pending)."""
    tasks = list(task_set.tasks.all())
    run = EvalRun.objects.create(
        bank=bank, task_set=task_set, note=note, k=k, state=state, tries_total=len(tasks) * len(kinds) * k
    )
    releases = releases or {}
    for position, kind in enumerate(kinds):
        arm = EvalArm.objects.create(run=run, kind=kind, release=releases.get(kind), position=position)
        EvalAttempt.objects.bulk_create(
            [EvalAttempt(run=run, arm=arm, task=task, number=n) for task in tasks for n in range(1, k + 1)]
        )
    return run


def outcomes_for(run: EvalRun, *, seed: int = 7) -> dict[str, dict[str, list[bool]]]:
    """Each arm's tries per task key, drawn at the arm's success rate (SUCCESS)."""
    rng = random.Random(seed)
    keys = list(run.task_set.tasks.values_list("key", flat=True))
    return {
        arm.kind: {key: [rng.random() < SUCCESS[arm.kind] for _ in range(run.k)] for key in keys}
        for arm in run.arms.all()
    }


def record_all(run: EvalRun, outcomes: dict[str, dict[str, list[bool]]]) -> None:
    """Every try recorded with ``outcomes`` as its check's result, its steps and tokens, and the run finished."""
    now = timezone.now()
    for attempt in EvalAttempt.objects.filter(run=run).select_related("arm", "task"):
        attempt.state = AttemptState.RECORDED
        attempt.check_passed = outcomes[attempt.arm.kind][attempt.task.key][attempt.number - 1]
        attempt.steps = 6
        attempt.prompt_tokens = int(TOKENS[attempt.arm.kind] * 0.8)
        attempt.completion_tokens = int(TOKENS[attempt.arm.kind] * 0.2)
        attempt.recorded_at = now
        attempt.save()
    EvalRun.objects.filter(pk=run.pk).update(tries_recorded=run.tries_total, last_activity_at=now)


def _pass_hat(successes: int, n: int, k: int) -> float:
    return comb(successes, k) / comb(n, k)


def _pass_at(successes: int, n: int, k: int) -> float:
    return 1 - comb(n - successes, k) / comb(n, k)


def results_for(run: EvalRun, outcomes: dict[str, dict[str, list[bool]]], *, tokens=None) -> dict:
    """Results in the contract's shape from ``outcomes``; ``tokens`` overrides an arm's tokens per try
    (None: not reported)."""
    tokens = {**TOKENS, **(tokens or {})}
    k, arms = run.k, {}
    keys = list(next(iter(outcomes.values())))
    for arm in run.arms.all():
        per_task = outcomes[arm.kind]
        successes = sum(sum(tries) for tries in per_task.values())
        tries = len(keys) * k
        rate = successes / tries
        per_try = tokens[arm.kind]
        arms[arm.kind] = {
            "release": arm.release.number if arm.release else None,
            "tries": tries,
            "known": tries,
            "successes": successes,
            "success_rate": rate,
            "pass_hat_k": {
                str(n): sum(_pass_hat(sum(t), k, n) for t in per_task.values()) / len(keys) for n in range(1, k + 1)
            },
            "pass_at_k": {
                str(n): sum(_pass_at(sum(t), k, n) for t in per_task.values()) / len(keys) for n in range(1, k + 1)
            },
            "mean_steps": 6.0,
            "prompt_tokens": None if per_try is None else per_try * 0.8,
            "completion_tokens": None if per_try is None else per_try * 0.2,
            "memory_tokens": 310.0 if arm.kind in ("candidate", "production") else 0.0,
            "tokens_per_try": per_try,
            "cost_per_try": None if per_try is None else per_try * 0.0000004,
            "success_per_1k_tokens": None if per_try is None else rate / per_try * 1000,
            "run_to_run_sd": 0.041,
        }
    comparisons = []
    for versus in [kind for kind in arms if kind != ArmKind.CANDIDATE]:
        if ArmKind.CANDIDATE not in arms:
            break
        mine, theirs = outcomes[ArmKind.CANDIDATE], outcomes[versus]
        difference = arms[ArmKind.CANDIDATE]["success_rate"] - arms[versus]["success_rate"]
        comparisons.append(
            {
                "arm": "candidate",
                "versus": versus,
                "difference": difference,
                "interval": [difference - 0.12, difference + 0.12],
                "p_value": 0.01 if difference > 0.12 else 0.4,
                "verdict": "better" if difference > 0.12 else "no_difference",
                "method": "paired bootstrap over tasks (10,000 resamples)",
                "flipped": {
                    "better": [key for key in keys if any(mine[key]) and not any(theirs[key])],
                    "worse": [key for key in keys if any(theirs[key]) and not any(mine[key])],
                },
            }
        )
    return {
        "complete": True,
        "tasks": len(keys),
        "k": k,
        "arms": arms,
        "comparisons": comparisons,
        "per_task": [
            {"key": key, "arms": {kind: {"successes": sum(outcomes[kind][key]), "known": k} for kind in arms}}
            for key in keys
        ],
        "verdict": {
            "at_actual_cost": comparisons[0]["verdict"] if comparisons else "not_enough",
            "at_equal_cost": next((c["verdict"] for c in comparisons if c["versus"] == "control"), "not_enough"),
            "text": "The candidate is better than production, also at equal cost.",
        },
        "gate": {"passed": True, "reason": "Not worse than production."},
    }


def finished_run(bank, task_set, **kwargs) -> tuple[EvalRun, dict]:
    """A finished run with every try recorded and its complete results stored; and its outcomes."""
    run = make_run(bank, task_set, **kwargs)
    outcomes = outcomes_for(run)
    record_all(run, outcomes)
    run.refresh_from_db()
    run.results = results_for(run, outcomes)
    run.finished_at = timezone.now()
    run.save(update_fields=["results", "finished_at"])
    return run, outcomes
