"""The evaluation methods of ``Client`` and ``AsyncClient`` against a live server: task sets, runs,
``evaluate(run_id, agent)`` with a plain and an async agent, and ``usage=`` on ``record`` / ``run``."""

from __future__ import annotations

import anyio
import pytest

import reasoningbank_client as rb
from tests import factories
from tests.clients.conftest import FAST_RETRY
from tests.clients.eval_agent import answer
from tests.clients.evaluation_setup import (
    CODES,
    equal_candidate,
    harmful_candidate,
    helpful_candidate,
    serve_every_lesson,
    vault_jsonl,
    vault_tasks,
)
from trajectories.evaluation.models import AttemptState, EvalAttempt, EvalRun
from trajectories.evaluation.verdicts import run_results_refresh
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def review_token(bank) -> str:
    return factories.make_token(bank, scopes=("retrieve", "ingest", "review"))


@pytest.fixture
def reviewer(rb_url, review_token):
    with rb.Client(rb_url, review_token, retry=FAST_RETRY, timeout=60) as c:
        yield c


def test_task_sets_and_runs_through_the_client(bank, reviewer, client):
    serve_every_lesson(bank)
    uploaded = reviewer.upload_task_set("vaults", vault_tasks(), description="four vaults")  # mappings → JSONL
    assert (uploaded.name, uploaded.description, uploaded.task_count) == ("vaults", "four vaults", 4)
    assert [s.id for s in reviewer.task_sets()] == [uploaded.id]
    detail = reviewer.task_set("vaults")
    assert [t["id"] for t in detail.tasks] == ["v1", "v2", "v3", "v4"] and detail.id == uploaded.id

    run = reviewer.create_evaluation(uploaded.id, ["none", "control"], 3, token_budget=2000, note="budget")
    assert (run.k, run.token_budget, run.note, run.state) == (3, 2000, "budget", "open")
    assert run.progress.total == 24 and run.progress.pending == 24 and run.results == {}
    assert run.command.startswith(f"rb eval run {run.id} -- ")
    assert [r.id for r in reviewer.evaluations()] == [run.id]

    claimed = client.next_try(run.id)  # the ingest token is the harness's
    attempt = claimed.try_
    assert attempt is not None and not claimed.done
    assert attempt.evaluation == run.id and attempt.arm in ("none", "control") and attempt.k == 3
    assert attempt.token_budget == 2000 and attempt.memories == [] and attempt.system_block == ""
    assert attempt.raw["task"] == attempt.task and attempt.task_key in CODES
    recorded = client.record_try(
        run.id, attempt.id, final_answer=CODES[attempt.task_key], steps=[{"action": "answer"}], outcome="success"
    )
    assert recorded.check_passed is True and recorded.try_id == attempt.id
    assert recorded.progress.recorded == 1 and recorded.progress.claimed == 0
    with pytest.raises(rb.ConflictError) as refused:
        client.record_try(run.id, attempt.id, final_answer="again")
    assert refused.value.code == "try_recorded"

    assert client.evaluation(run.id).progress.recorded == 1  # any token of the bank reads a run
    cancelled = reviewer.cancel_evaluation(run.id)
    assert cancelled.state == "cancelled"
    with pytest.raises(rb.ConflictError) as finished:
        client.next_try(run.id)
    assert finished.value.code == "evaluation_finished"


def test_evaluate_records_every_try_and_an_agent_error_as_a_failure(bank, reviewer):
    serve_every_lesson(bank)
    reviewer.upload_task_set("vaults", vault_jsonl())
    run = reviewer.create_evaluation("vaults", ["none", "control"], 2)
    reports = []

    def agent(attempt: dict) -> dict:
        if attempt["task"]["id"] == "v4":
            raise RuntimeError("the vault door is stuck")
        if attempt["task"]["id"] == "v3":
            return {"final_answer": "3333", "outcome": "maybe"}
        return answer(attempt)

    summary = reviewer.evaluate(run.id, agent, parallel=3, on_try=reports.append)

    assert (summary.ran, summary.recorded, summary.failed, summary.already_recorded) == (16, 16, 8, 0)
    assert summary.done and summary.progress.recorded == summary.progress.total == 16
    assert len(reports) == 16
    errors = {r.try_.task_key: r.error for r in reports if r.error}
    assert errors == {
        "v4": "RuntimeError: the vault door is stuck",
        "v3": "outcome must be 'success' or 'failure', got 'maybe'",
    }
    stuck = EvalAttempt.objects.filter(run__public_id=run.id, task__key="v4").select_related("trajectory").first()
    assert stuck.check_passed is False and stuck.trajectory.outcome == "failure"
    assert stuck.trajectory.steps[-1]["content"].endswith("RuntimeError: the vault door is stuck")
    passed = EvalAttempt.objects.filter(run__public_id=run.id, check_passed=True)
    assert sorted({a.task.key for a in passed.select_related("task")}) == ["v1", "v2"]


def test_async_evaluate_awaits_an_async_agent(bank, rb_url, review_token):
    serve_every_lesson(bank)

    async def main():
        async with rb.AsyncClient(rb_url, review_token, retry=FAST_RETRY, timeout=60) as aclient:
            await aclient.upload_task_set("vaults", vault_jsonl())
            run = await aclient.create_evaluation("vaults", ["none", "control"], 1)

            async def agent(attempt: dict) -> dict:
                await anyio.sleep(0.01)
                return answer(attempt)

            return run, await aclient.evaluate(run.id, agent, parallel=2)

    run, summary = anyio.run(main)
    assert summary.done and (summary.ran, summary.recorded, summary.failed) == (8, 8, 0)
    attempts = EvalAttempt.objects.filter(run__public_id=run.id)
    assert all(a.state == AttemptState.RECORDED for a in attempts)
    assert {a.task.key for a in attempts.filter(check_passed=True).select_related("task")} == {"v1", "v2"}


def test_usage_is_sent_with_a_trajectory(client):
    recorded = client.record(
        "Open vault v1", steps=[{"action": "answer"}], usage={"prompt_tokens": 120, "completion_tokens": 8}
    )
    with client.run("Open vault v2", retrieve=False, usage={"prompt_tokens": 30, "completion_tokens": 2}) as run:
        run.step(action="answer")
    stored = Trajectory.objects.get(public_id=recorded.id)
    assert (stored.prompt_tokens, stored.completion_tokens) == (120, 8)
    stored = Trajectory.objects.get(public_id=run.recorded.id)
    assert (stored.prompt_tokens, stored.completion_tokens) == (30, 2)


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (helpful_candidate, {"candidate": {"v1", "v2", "v3", "v4"}, "production": {"v1", "v2", "v3"}}),
        (harmful_candidate, {"candidate": {"v3"}, "production": {"v1", "v2", "v3"}}),
        (equal_candidate, {"candidate": {"v1", "v2", "v3"}, "production": {"v1", "v2", "v3"}}),
    ],
    ids=["helpful", "harmful", "equal"],
)
def test_the_scripted_candidates_succeed_where_their_lessons_say(bank, approved, reviewer, build, expected):
    release = build(bank, approved)
    reviewer.upload_task_set("vaults", vault_jsonl())
    run = reviewer.create_evaluation("vaults", ["candidate", "production"], 1, release=release)
    assert reviewer.evaluate(run.id, answer, parallel=2).done
    passed = EvalAttempt.objects.filter(run__public_id=run.id, check_passed=True).select_related("arm", "task")
    found: dict[str, set[str]] = {"candidate": set(), "production": set()}
    for attempt in passed:
        found[attempt.arm.kind].add(attempt.task.key)
    assert found == expected


@pytest.mark.parametrize(
    ("build", "verdict"),
    [(helpful_candidate, "better"), (harmful_candidate, "worse"), (equal_candidate, "no_difference")],
    ids=["helpful", "harmful", "equal"],
)
def test_twenty_vaults_three_tries_give_the_candidates_their_verdicts(bank, approved, reviewer, build, verdict):
    release = build(bank, approved, n=20)
    reviewer.upload_task_set("twenty vaults", vault_jsonl(20))
    run = reviewer.create_evaluation("twenty vaults", ["candidate", "production"], 3, release=release)
    assert reviewer.evaluate(run.id, answer, parallel=4).done
    results = run_results_refresh(EvalRun.objects.get(public_id=run.id))  # what the worker does after a record
    (versus_production,) = [c for c in results["comparisons"] if c["versus"] == "production"]
    assert results["complete"] and versus_production["verdict"] == verdict, versus_production
