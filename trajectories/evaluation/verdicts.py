"""An evaluation run's results, from its tries (the statistics are in trajectories.evaluation.statistics).

A try's outcome is its task's check when the task has one, else its trajectory's verdict (the
agent's own signal, the LLM judge or a reviewer); a try not recorded yet, or whose trajectory is not
judged yet, has no known outcome. The run is *complete* once every try is recorded and every outcome
is known: then its candidate release's evaluation (what the publishing gate reads) is filled and
"evaluation.finished" is sent, once."""

from __future__ import annotations

from django.db import transaction
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from accounts.webhooks.events import bank_webhook_data
from accounts.webhooks.subscriptions import webhook_events_emit
from memories.releases.gate import verdicts_pass
from memories.releases.models import BankReleasing, EvaluationGate, ReleaseEvaluation
from trajectories.evaluation import statistics
from trajectories.evaluation.models import ArmKind, AttemptState, EvalArm, EvalAttempt, EvalRun, RunState
from trajectories.models import Label
from trajectories.pipeline.llm_prices import llm_cost

SUMMARY_MAX = 500
# The arm compared with the others: the candidate, else production (a run without a candidate).
LEADS = (ArmKind.CANDIDATE, ArmKind.PRODUCTION)
COMPARATORS = (ArmKind.PRODUCTION, ArmKind.NO_MEMORY, ArmKind.CONTROL)
ARM_NAMES = {
    ArmKind.CANDIDATE: "the candidate",
    ArmKind.PRODUCTION: "production",
    ArmKind.NO_MEMORY: "no memory",
    ArmKind.CONTROL: "the same-budget control",
}


def try_outcome_of(*, check_passed: bool | None, verdict: str) -> bool | None:
    """The outcome rule: the task's check when it ran, else the trajectory's verdict (None: not known yet)."""
    if check_passed is not None:
        return check_passed
    return {Label.SUCCESS: True, Label.FAILURE: False}.get(verdict)


def _first(*values):
    return next((v for v in values if v is not None), None)


def _tries(run: EvalRun, arms: list[EvalArm]) -> tuple[dict[str, list[statistics.Try]], int, int]:
    """Per arm kind, its recorded tries; and how many tries the run has, and how many have a known outcome.
    One query (the tries with their trajectories' verdict, steps, tokens and model)."""
    kinds = {arm.pk: arm.kind for arm in arms}
    by_kind: dict[str, list[statistics.Try]] = {arm.kind: [] for arm in arms}
    total = known = 0
    rows = EvalAttempt.objects.filter(run=run).values(
        "arm_id",
        "task__key",
        "number",
        "state",
        "check_passed",
        "steps",
        "prompt_tokens",
        "completion_tokens",
        "memory_tokens",
        "trajectory__verdict",
        "trajectory__step_count",
        "trajectory__prompt_tokens",
        "trajectory__completion_tokens",
        model=KeyTextTransform("model", "trajectory__metadata"),
    )
    for row in rows.order_by("task__position", "task_id", "number"):
        total += 1
        if row["state"] != AttemptState.RECORDED:
            continue
        kind = kinds[row["arm_id"]]
        outcome = try_outcome_of(check_passed=row["check_passed"], verdict=row["trajectory__verdict"] or "")
        known += outcome is not None
        prompt = _first(row["prompt_tokens"], row["trajectory__prompt_tokens"])
        completion = _first(row["completion_tokens"], row["trajectory__completion_tokens"])
        model = row["model"]
        cost = None
        if model and prompt is not None and completion is not None:
            cost = llm_cost(model=model, prompt_tokens=prompt, completion_tokens=completion)
        by_kind[kind].append(
            statistics.Try(
                task=row["task__key"],
                number=row["number"],
                outcome=outcome,
                steps=_first(row["steps"], row["trajectory__step_count"]),
                prompt_tokens=prompt,
                completion_tokens=completion,
                # The control is served no memory block: its tries carry the block's tokens as extra budget.
                memory_tokens=0 if kind == ArmKind.CONTROL else row["memory_tokens"],
                cost=cost,
            )
        )
    return by_kind, total, known


def _points(value: float) -> str:
    return f"{value * 100:+.0f}".replace("-", "−")


def _phrase(comparison: dict | None, versus: str) -> str:
    if comparison is None:
        return f"was not compared with {versus} (the run has no such arm)"
    verdict, difference = comparison["verdict"], comparison["difference"]
    low, high = comparison["interval"]
    numbers = f"{_points(difference)} points, 95% interval {_points(low)} to {_points(high)}"
    if verdict == statistics.BETTER:
        return f"did better than {versus} ({numbers})"
    if verdict == statistics.WORSE:
        return f"did worse than {versus} ({numbers})"
    if verdict == statistics.NO_DIFFERENCE:
        return f"showed no difference from {versus} ({numbers})"
    return f"has too few tasks with known outcomes in both arms to be compared with {versus} (at least {statistics.MIN_TASKS} needed)"


def _verdict(lead: str | None, actual: dict | None, equal: dict | None, complete: bool) -> dict:
    if lead is None or (actual is None and equal is None):
        text = "This run has no two arms to compare."
    else:
        versus = ARM_NAMES[actual["versus"]] if actual else "production"
        equal_text = (
            _phrase(equal, "the same-budget control")
            if equal
            else "was not measured (the run has no same-budget control)"
        )
        text = f"{ARM_NAMES[lead].capitalize()} {_phrase(actual, versus)}; at equal cost it {equal_text}."
        if not complete:
            text = "So far: " + text
    return {
        "at_actual_cost": actual["verdict"] if actual else statistics.NOT_ENOUGH,
        "at_equal_cost": equal["verdict"] if equal else statistics.NOT_ENOUGH,
        "text": text,
    }


def _gate_rule(run: EvalRun) -> str:
    releasing = BankReleasing.objects.filter(bank_id=run.bank_id).values_list("evaluation_gate", flat=True).first()
    return releasing or EvaluationGate.OFF


def _gate(rule: str, *, lead: str | None, actual: dict | None, equal: dict | None, complete: bool) -> dict:
    """Whether the candidate passes the bank's gate (the not-worse rule when the gate is off), by the
    gate's own rule (memories.releases.gate.verdicts_pass: against production, never no memory), and why."""
    if lead != ArmKind.CANDIDATE:
        return {"passed": None, "reason": "The run has no candidate release to pass."}
    if not complete:
        return {"passed": None, "reason": "Not every try is recorded and judged yet."}
    has_production = actual is not None and actual["versus"] == ArmKind.PRODUCTION
    passed = verdicts_pass(
        versus_production=actual["verdict"] if has_production else "",
        versus_control=equal["verdict"] if equal is not None else "",
        gate=rule,
    )
    if not has_production:
        return {"passed": passed, "reason": "The run has no production arm: the gate compares the candidate with it."}
    versus = ARM_NAMES[actual["versus"]]
    if actual["verdict"] == statistics.NOT_ENOUGH:
        reason = (
            f"Too few tasks have known outcomes to show it is not worse than {versus} "
            f"(at least {statistics.MIN_TASKS} are needed)."
        )
    elif actual["verdict"] == statistics.WORSE:
        reason = f"It did worse than {versus}."
    elif rule == EvaluationGate.BEATS_CONTROL and equal is None:
        reason = "The bank requires beating the same-budget control; the run has none."
    elif rule == EvaluationGate.BEATS_CONTROL and not passed:
        reason = "It is not worse than production but did not beat the same-budget control."
    elif rule == EvaluationGate.BEATS_CONTROL:
        reason = f"It is not worse than {versus} and beat the same-budget control."
    else:
        note = "" if rule == EvaluationGate.NOT_WORSE else " (the bank does not require an evaluation)"
        reason = f"It is not worse than {versus}{note}."
    return {"passed": passed, "reason": reason}


def run_results(run: EvalRun) -> dict:
    """``run``'s results as the API and the pages read them (complete or not): per arm, the comparisons of
    the candidate (else production) with each other arm, per task, the two verdicts and the gate."""
    arms = list(run.arms.select_related("release").order_by("position", "id"))
    by_kind, total, known = _tries(run, arms)
    present = [arm.kind for arm in arms]
    complete = bool(total) and known == total and run.state != RunState.CANCELLED
    tasks = list(run.task_set.tasks.order_by("position", "id").values_list("key", flat=True))
    counts = {kind: statistics.task_counts(tries) for kind, tries in by_kind.items()}
    lead = next((kind for kind in LEADS if kind in present), None)
    comparisons = []
    for versus in COMPARATORS:
        if lead is None or versus == lead or versus not in present:
            continue
        compared = statistics.paired_comparison(counts[lead], counts[versus])
        compared.pop("tasks")
        comparisons.append({"arm": lead, "versus": versus, **compared})
    by_versus = {c["versus"]: c for c in comparisons}
    actual = by_versus.get(ArmKind.PRODUCTION) or by_versus.get(ArmKind.NO_MEMORY)
    equal = by_versus.get(ArmKind.CONTROL)
    return {
        "complete": complete,
        "tasks": len(tasks),
        "k": run.k,
        "arms": {
            arm.kind: {"release": arm.release.number if arm.release_id else None}
            | statistics.arm_summary(by_kind[arm.kind], run.k)
            for arm in arms
        },
        "comparisons": comparisons,
        "per_task": [
            {
                "key": key,
                "arms": {
                    kind: {"successes": counts[kind].get(key, (0, 0))[1], "known": counts[kind].get(key, (0, 0))[0]}
                    for kind in present
                },
            }
            for key in tasks
        ],
        "verdict": _verdict(lead, actual, equal, complete),
        "gate": _gate(_gate_rule(run), lead=lead, actual=actual, equal=equal, complete=complete),
    }


def _release_evaluation_fill(run: EvalRun, results: dict) -> None:
    candidate = run.arms.filter(kind=ArmKind.CANDIDATE, release__isnull=False).first()
    if candidate is None:
        return
    # "" when the run has no such arm; "not_enough" is a final verdict too (too few tasks to tell).
    by_versus = {c["versus"]: c["verdict"] for c in results["comparisons"]}
    ReleaseEvaluation.objects.update_or_create(
        run=run.public_id,
        defaults={
            "passed": results["gate"]["passed"],
            "versus_production": by_versus.get(ArmKind.PRODUCTION, ""),
            "versus_control": by_versus.get(ArmKind.CONTROL, ""),
            "summary": results["verdict"]["text"][:SUMMARY_MAX],
            "finished_at": run.finished_at,
        },
        create_defaults={"release_id": candidate.release_id},
    )


def _finished_payload(run: EvalRun, results: dict) -> dict:
    candidate = results["arms"].get(ArmKind.CANDIDATE)
    return {
        "bank": bank_webhook_data(run.bank),
        "evaluation": {
            "id": str(run.public_id),
            "note": run.note,
            "task_set": {"id": str(run.task_set.public_id), "name": run.task_set.name},
            "k": run.k,
            "release": candidate["release"] if candidate else None,
            "verdict": results["verdict"],
            "gate": results["gate"],
        },
    }


def run_results_refresh(run: EvalRun) -> dict:
    """Compute ``run``'s results from its tries and store them on the run (and on ``run``). Once complete
    (every try recorded, every outcome known), the run is finished, its candidate release's evaluation
    is filled (again on each refresh, as verdicts may be corrected), and "evaluation.finished" is sent the
    first time only. Returns the results."""
    with transaction.atomic():
        locked = EvalRun.objects.select_for_update().select_related("bank__team", "task_set").get(pk=run.pk)
        was_complete = bool(locked.results.get("complete"))
        results = run_results(locked)
        locked.results = results
        fields = ["results"]
        if results["complete"]:
            if locked.state == RunState.OPEN:
                locked.state = RunState.FINISHED
                fields.append("state")
            if locked.finished_at is None:
                locked.finished_at = timezone.now()
                fields.append("finished_at")
            _release_evaluation_fill(locked, results)
            if not was_complete:
                webhook_events_emit(
                    bank_id=locked.bank_id, event="evaluation.finished", payloads=[_finished_payload(locked, results)]
                )
        locked.save(update_fields=fields)
    run.results, run.state, run.finished_at = locked.results, locked.state, locked.finished_at
    return results
