"""A whole evaluation run through the API with a real worker judging the tries against the fake LLM:
a scripted agent succeeds only when it is served the dates lesson, so the candidate's tries succeed
and the no-memory arm's fail; every try is judged once and none is distilled."""

from __future__ import annotations

import pytest

from memories.items.models import MemoryItem
from tests import factories
from tests.trajectories.evaluation.runs_scene import api, make_task_set, releases_scene
from tests.trajectories.llm_answers import JUDGE_FAILURE, JUDGE_SUCCESS
from tests.worker import celery_broker, celery_worker, fake_llm_worker_env, wait_for  # noqa: F401
from trajectories.evaluation.models import EvalAttempt, EvalRun
from trajectories.models import Status, Trajectory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TASKS = [
    ("delivery", "Pick the delivery date on the checkout form.", None),
    ("return", "Choose the date a parcel is picked up for a return.", None),
]


@pytest.fixture
def eager_celery():
    """Off here: tasks must travel through the broker to the real worker."""
    yield


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


def agent(offered: dict) -> dict:
    """The team's agent, scripted: it types the date only when a lesson told it to."""
    told = any("Type dates" in m["title"] for m in offered["memories"])
    answer = "Typed 2026-05-03 into the date field." if told else "The calendar widget did not respond."
    return {
        "steps": [{"thought": "Fill the form.", "action": "type_date()", "observation": answer}],
        "final_answer": answer,
        "usage": {"prompt_tokens": 1000 + offered["memory_tokens"], "completion_tokens": 50},
    }


def test_a_run_driven_through_the_api_is_judged_by_the_worker_and_never_distilled(
    fake_llm, celery_worker, client, owner
):
    fake_llm.responder = lambda messages: (
        JUDGE_SUCCESS if "Typed 2026-05-03" in messages[-1]["content"] else JUDGE_FAILURE
    )
    bank = factories.make_bank(team=factories.make_team(owner=owner))
    scene = releases_scene(bank, owner)
    make_task_set(bank, tasks=TASKS)
    items = MemoryItem.objects.filter(bank=bank).count()
    review = factories.make_token(bank, scopes=("review",))
    ingest = factories.make_token(bank, scopes=("ingest",))
    status, created = api(
        client,
        review,
        "post",
        "/evaluations",
        {"task_set": "checkout", "arms": ["candidate", "none"], "release": scene.candidate, "k": 2},
    )
    assert status == 201, created
    run_id = created["id"]
    while True:  # the harness loop (what `rb eval run` does)
        status, offer = api(client, ingest, "post", f"/evaluations/{run_id}/next")
        assert status == 200, offer
        if offer["try"] is None:
            break
        status, recorded = api(
            client, ingest, "post", f"/evaluations/{run_id}/tries/{offer['try']['id']}", agent(offer["try"])
        )
        assert status == 201, recorded
    assert offer["done"] is True
    run = EvalRun.objects.get(public_id=run_id)
    assert (run.state, run.tries_recorded) == ("finished", 8)
    tries = Trajectory.objects.filter(bank=bank, learn=False)
    wait_for(
        lambda: all(t.status in (Status.DONE, Status.NEEDS_ATTENTION) for t in tries.all()),
        timeout=120,
        what="the worker to judge every try",
    )
    outcomes = {
        (a.arm.kind, a.task.key, a.number): a.trajectory.verdict
        for a in EvalAttempt.objects.filter(run=run).select_related("arm", "task", "trajectory")
    }
    assert outcomes == {
        (kind, key, n): ("success" if kind == "candidate" else "failure")
        for kind in ("candidate", "none")
        for key, _, _ in TASKS
        for n in (1, 2)
    }
    assert {t.status for t in tries} == {Status.DONE}
    assert len(fake_llm.requests) == 8  # each try judged once; nothing distilled
    assert MemoryItem.objects.filter(bank=bank).count() == items
    _, body = api(client, ingest, "get", f"/evaluations/{run_id}")
    assert body["progress"]["known"] == 8 and body["state"] == "finished"
    wait_for(lambda: "evaluation.results_refresh" in celery_worker.log(), timeout=60, what="the results refresh")
