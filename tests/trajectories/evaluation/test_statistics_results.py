"""An evaluation run's results from its tries in the database: the contract's JSON (complete and
partial), the outcome rule (the task's check, else the trajectory's verdict), cost from the LLM
prices, the candidate release's evaluation the gate reads, and "evaluation.finished" sent once."""

from __future__ import annotations

import pytest

from accounts.models import WebhookDelivery
from accounts.webhooks.subscriptions import webhook_subscription_create
from memories.releases.models import BankReleasing, EvaluationGate, Release, ReleaseEvaluation
from trajectories.evaluation.models import (
    ArmKind,
    AttemptState,
    EvalArm,
    EvalAttempt,
    EvalRun,
    EvalTask,
    RunState,
    TaskSet,
    TaskSetSource,
)
from trajectories.evaluation.verdicts import run_results, run_results_refresh
from trajectories.models import Label, Status, Trajectory

TOP = {"complete", "tasks", "k", "arms", "comparisons", "per_task", "verdict", "gate"}
ARM = {
    "release",
    "tries",
    "known",
    "successes",
    "success_rate",
    "pass_hat_k",
    "pass_at_k",
    "mean_steps",
    "prompt_tokens",
    "completion_tokens",
    "memory_tokens",
    "tokens_per_try",
    "cost_per_try",
    "success_per_1k_tokens",
    "run_to_run_sd",
}
COMPARISON = {"arm", "versus", "difference", "interval", "p_value", "verdict", "method", "flipped"}
TASKS, K = 12, 3


def _verdict(outcome: bool | None) -> str:
    return {True: Label.SUCCESS, False: Label.FAILURE, None: ""}[outcome]


def make_run(
    bank, outcomes: dict, *, tasks: int = TASKS, k: int = K, gate: str = EvaluationGate.NOT_WORSE, checks=None
):
    """A run of ``bank`` whose arms (the keys of ``outcomes``) tried ``tasks`` tasks ``k`` times;
    ``outcomes[kind](task, number)`` is True / False / None (not judged yet) / "pending" (not recorded).
    ``checks(task)`` gives a task a check whose result ``check_passed(kind, task, number)`` decides."""
    production = Release.objects.create(bank=bank, number=1)
    candidate = Release.objects.create(bank=bank, number=2)
    BankReleasing.objects.update_or_create(
        bank=bank, defaults={"latest": 2, "production": production, "evaluation_gate": gate}
    )
    task_set = TaskSet.objects.create(bank=bank, name="checkout", source=TaskSetSource.UPLOAD, task_count=tasks)
    rows = EvalTask.objects.bulk_create(
        EvalTask(task_set=task_set, key=f"task-{i}", text=f"Task {i}", position=i) for i in range(tasks)
    )
    run = EvalRun.objects.create(bank=bank, task_set=task_set, k=k, tries_total=tasks * k * len(outcomes))
    releases = {ArmKind.CANDIDATE: candidate, ArmKind.PRODUCTION: production}
    for position, kind in enumerate(outcomes):
        arm = EvalArm.objects.create(run=run, kind=kind, release=releases.get(kind), position=position)
        for i, task in enumerate(rows):
            for number in range(1, k + 1):
                outcome = outcomes[kind](i, number)
                attempt = EvalAttempt(run=run, arm=arm, task=task, number=number, memory_tokens=40)
                if outcome != "pending":
                    attempt.trajectory = Trajectory.objects.create(
                        bank=bank,
                        task=task.text,
                        status=Status.DONE if outcome is not None else Status.JUDGING,
                        verdict=_verdict(outcome),
                        step_count=3 + number,
                        prompt_tokens=1000,
                        completion_tokens=200,
                        metadata={"model": "gpt-x"},
                        learn=False,
                    )
                    attempt.state = AttemptState.RECORDED
                    if checks and checks(i):
                        attempt.check_passed = checks(i)(kind, i, number)
                attempt.save()
    ReleaseEvaluation.objects.create(release=candidate, run=run.public_id)  # as the run's creation does
    return run


def always(value):
    return lambda task, number: value


def solves_first(n):
    """Succeeds on every try of the first ``n`` tasks, fails the rest."""
    return lambda task, number: task < n


@pytest.fixture
def subscribed(bank, settings):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    webhook_subscription_create(bank=bank, url="http://127.0.0.1:9/hooks", events="evaluation.finished")


def test_a_helpful_candidate_gets_the_contract_results_passes_the_gate_and_is_announced_once(
    bank, subscribed, settings
):
    settings.RB_LLM_PRICES = {"gpt-x": {"input": 2.0, "output": 8.0}}
    run = make_run(
        bank,
        {ArmKind.CANDIDATE: always(True), ArmKind.PRODUCTION: solves_first(2), ArmKind.CONTROL: solves_first(3)},
    )
    results = run_results_refresh(run)
    assert set(results) == TOP and (results["complete"], results["tasks"], results["k"]) == (True, TASKS, K)
    assert list(results["arms"]) == ["candidate", "production", "control"]
    assert all(set(arm) == ARM for arm in results["arms"].values())
    candidate, production = results["arms"]["candidate"], results["arms"]["production"]
    assert (candidate["release"], production["release"], results["arms"]["control"]["release"]) == (2, 1, None)
    assert (candidate["tries"], candidate["known"], candidate["successes"]) == (36, 36, 36)
    assert production["success_rate"] == pytest.approx(2 / 12)
    assert production["pass_hat_k"] == {
        "1": pytest.approx(2 / 12),
        "2": pytest.approx(2 / 12),
        "3": pytest.approx(2 / 12),
    }
    assert candidate["mean_steps"] == pytest.approx(5) and candidate["tokens_per_try"] == pytest.approx(1200)
    # 1,000 prompt tokens at $2 and 200 completion tokens at $8 per million.
    assert candidate["cost_per_try"] == pytest.approx(0.0036)
    assert candidate["success_per_1k_tokens"] == pytest.approx(1000 / 1200)
    assert candidate["memory_tokens"] == 40 and results["arms"]["control"]["memory_tokens"] == 0
    assert candidate["run_to_run_sd"] == 0.0
    assert [(c["versus"], c["verdict"]) for c in results["comparisons"]] == [
        ("production", "better"),
        ("control", "better"),
    ]
    versus_production = results["comparisons"][0]
    assert set(versus_production) == COMPARISON and versus_production["arm"] == "candidate"
    assert versus_production["difference"] == pytest.approx(10 / 12)
    assert versus_production["p_value"] == pytest.approx(2 / 2**10)
    assert versus_production["flipped"] == {"better": [f"task-{i}" for i in range(2, 12)], "worse": []}
    assert results["per_task"][0] == {
        "key": "task-0",
        "arms": {kind: {"successes": 3, "known": 3} for kind in ("candidate", "production", "control")},
    }
    assert results["per_task"][5]["arms"]["production"] == {"successes": 0, "known": 3}
    assert results["verdict"]["at_actual_cost"] == "better" and results["verdict"]["at_equal_cost"] == "better"
    assert results["verdict"]["text"].startswith("The candidate did better than production (+83 points")
    assert results["gate"] == {"passed": True, "reason": "It is not worse than production."}

    run.refresh_from_db()
    assert run.results == results and run.state == RunState.FINISHED and run.finished_at is not None
    evaluation = ReleaseEvaluation.objects.get(run=run.public_id)
    assert (evaluation.passed, evaluation.versus_production, evaluation.versus_control) == (True, "better", "better")
    assert evaluation.summary == results["verdict"]["text"] and evaluation.finished_at == run.finished_at
    delivery = WebhookDelivery.objects.get()
    assert delivery.event == "evaluation.finished"
    data = delivery.payload["data"]
    assert data["evaluation"]["id"] == str(run.public_id) and data["evaluation"]["release"] == 2
    assert data["evaluation"]["verdict"] == results["verdict"] and data["bank"]["id"] == str(bank.public_id)

    run_results_refresh(run)  # a later refresh (say a corrected verdict) does not announce it again
    assert WebhookDelivery.objects.count() == 1


def test_a_run_under_way_gives_partial_results_and_passes_nothing_until_every_outcome_is_known(bank, subscribed):
    def unjudged_last(task, number):
        return None if task == 11 else True

    def pending_last(task, number):
        return "pending" if (task, number) == (11, 3) else task < 2

    run = make_run(bank, {ArmKind.CANDIDATE: unjudged_last, ArmKind.PRODUCTION: pending_last})
    results = run_results_refresh(run)
    assert results["complete"] is False
    assert results["arms"]["candidate"]["known"] == 33 and results["arms"]["candidate"]["tries"] == 36
    assert results["arms"]["production"]["tries"] == 35
    assert results["per_task"][11]["arms"] == {
        "candidate": {"successes": 0, "known": 0},
        "production": {"successes": 0, "known": 2},
    }
    # Eleven tasks are known in both arms: enough for a provisional verdict, said as such.
    assert results["comparisons"][0]["verdict"] == "better"
    assert results["verdict"]["text"].startswith("So far: ")
    assert results["gate"]["passed"] is None
    run.refresh_from_db()
    assert run.state == RunState.OPEN and run.finished_at is None and run.results == results
    assert ReleaseEvaluation.objects.get(run=run.public_id).passed is None
    assert not WebhookDelivery.objects.exists()

    attempt = EvalAttempt.objects.get(run=run, state=AttemptState.PENDING)
    attempt.trajectory = Trajectory.objects.create(bank=bank, task="Task 11", verdict=Label.FAILURE, learn=False)
    attempt.state = AttemptState.RECORDED
    attempt.save()
    Trajectory.objects.filter(evaluation_tries__run=run, verdict="").update(verdict=Label.SUCCESS)
    results = run_results_refresh(run)
    assert results["complete"] is True and results["gate"]["passed"] is True
    assert ReleaseEvaluation.objects.get(run=run.public_id).passed is True
    assert WebhookDelivery.objects.count() == 1


def test_a_harmful_candidate_is_worse_and_fails_the_gate(bank):
    run = make_run(bank, {ArmKind.CANDIDATE: solves_first(1), ArmKind.PRODUCTION: always(True)})
    results = run_results_refresh(run)
    assert results["verdict"]["at_actual_cost"] == "worse"
    assert results["gate"] == {"passed": False, "reason": "It did worse than production."}
    assert results["comparisons"][0]["flipped"]["worse"] == [f"task-{i}" for i in range(1, 12)]
    evaluation = ReleaseEvaluation.objects.get(run=run.public_id)
    assert (evaluation.passed, evaluation.versus_production, evaluation.versus_control) == (False, "worse", "")


def test_an_equal_candidate_shows_no_difference_and_must_beat_the_control_when_the_bank_says_so(bank):
    run = make_run(
        bank,
        {ArmKind.CANDIDATE: solves_first(6), ArmKind.PRODUCTION: solves_first(6), ArmKind.CONTROL: solves_first(6)},
        gate=EvaluationGate.BEATS_CONTROL,
    )
    results = run_results_refresh(run)
    assert results["verdict"]["at_actual_cost"] == "no_difference"
    assert results["verdict"]["at_equal_cost"] == "no_difference"
    assert "showed no difference from production" in results["verdict"]["text"]
    assert results["gate"]["passed"] is False and "did not beat the same-budget control" in results["gate"]["reason"]
    evaluation = ReleaseEvaluation.objects.get(run=run.public_id)
    assert (evaluation.passed, evaluation.versus_production, evaluation.versus_control) == (
        False,
        "no_difference",
        "no_difference",
    )


def test_without_production_the_candidate_is_compared_with_no_memory_and_the_control_verdict_is_not_enough(bank):
    run = make_run(bank, {ArmKind.CANDIDATE: always(True), ArmKind.NO_MEMORY: solves_first(2)})
    results = run_results_refresh(run)
    assert results["verdict"]["at_actual_cost"] == "better" and results["verdict"]["at_equal_cost"] == "not_enough"
    assert "did better than no memory" in results["verdict"]["text"]
    assert "no same-budget control" in results["verdict"]["text"]
    # The gate asks "not worse than production": a run without production cannot pass it.
    assert results["gate"]["passed"] is False and "no production arm" in results["gate"]["reason"]
    evaluation = ReleaseEvaluation.objects.get(run=run.public_id)
    assert (evaluation.passed, evaluation.versus_production, evaluation.versus_control) == (False, "", "")


def test_too_few_tasks_give_not_enough_and_do_not_pass(bank):
    run = make_run(bank, {ArmKind.CANDIDATE: always(True), ArmKind.PRODUCTION: always(False)}, tasks=9)
    results = run_results_refresh(run)
    assert results["comparisons"][0]["verdict"] == "not_enough"
    assert results["gate"]["passed"] is False and "Too few tasks" in results["gate"]["reason"]
    # Final but inconclusive: the gate's message can say so rather than "no production arm".
    assert ReleaseEvaluation.objects.get(run=run.public_id).versus_production == "not_enough"


def test_a_task_check_decides_the_outcome_over_the_trajectory_verdict(bank):
    def check(task):
        return (lambda kind, task, number: kind == ArmKind.CANDIDATE) if task < 11 else None

    # Every trajectory was judged a success, but the checks fail production on the first 11 tasks.
    run = make_run(bank, {ArmKind.CANDIDATE: always(True), ArmKind.PRODUCTION: always(True)}, checks=check)
    results = run_results(run)
    assert results["arms"]["production"]["successes"] == 3  # task 11 has no check: its verdict counts
    assert results["verdict"]["at_actual_cost"] == "better"


def test_cost_is_unknown_without_a_price_for_the_model(bank):
    run = make_run(bank, {ArmKind.CANDIDATE: always(True), ArmKind.PRODUCTION: always(True)})
    arm = run_results(run)["arms"]["candidate"]
    assert arm["cost_per_try"] is None and arm["tokens_per_try"] == pytest.approx(1200)


def test_results_read_the_tries_in_a_fixed_number_of_queries(bank, django_assert_num_queries):
    run = make_run(bank, {ArmKind.CANDIDATE: always(True), ArmKind.PRODUCTION: always(False)})
    with django_assert_num_queries(4):  # arms, tries with their trajectories, tasks, the gate rule
        run_results(run)
