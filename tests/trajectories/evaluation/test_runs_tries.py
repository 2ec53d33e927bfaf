"""Claiming and recording the tries of an evaluation run through the API, with real tokens: what each
arm is served (pinned, leave-one-task-out, the control's extra tokens), what a record writes, the
409s, leases and resuming, cancelling and finishing, and that none of it reaches live Impact."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import AuditEvent
from memories.items.experiences import experience_create
from memories.items.models import MemoryItem
from memories.serving.models import RetrievalEvent, RetrievalTally
from reasoningbank_site.text import token_estimate
from tests import factories
from tests.conftest import queued_tasks
from tests.trajectories.evaluation.runs_scene import api, make_task_set, releases_scene
from trajectories.evaluation.attempts import try_claim, try_outcome
from trajectories.evaluation.models import AttemptState, EvalAttempt, EvalRun
from trajectories.evaluation.runs import evaluation_create
from trajectories.impact.report import bank_impact
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db

ANSWER = {
    "steps": factories.STEPS,
    "final_answer": "Delivery on 2026-05-03.",
    "usage": {"prompt_tokens": 900, "completion_tokens": 40},
}


@pytest.fixture
def scene(bank, owner):
    scene = releases_scene(bank, owner)
    make_task_set(scene.bank)
    return scene


@pytest.fixture
def tokens(bank):
    return factories.make_token(bank, scopes=("review",)), factories.make_token(bank, scopes=("ingest",))


def _create(client, review, **body) -> str:
    body = {"task_set": "checkout", "arms": ["candidate", "production", "none", "control"], "k": 1, **body}
    status, answer = api(client, review, "post", "/evaluations", body)
    assert status == 201, answer
    return answer["id"]


def _claim(client, ingest, run_id) -> dict:
    status, body = api(client, ingest, "post", f"/evaluations/{run_id}/next")
    assert status == 200, body
    return body


def _all_tries(client, ingest, run_id) -> list[dict]:
    tries = []
    while (offered := _claim(client, ingest, run_id)["try"]) is not None:
        tries.append(offered)
    return tries


def test_each_arm_is_served_its_pinned_release_and_the_control_the_block_s_tokens(client, scene, tokens):
    review, ingest = tokens
    run_id = _create(client, review, release=scene.candidate, token_budget=3000)
    tries = _all_tries(client, ingest, run_id)
    assert len(tries) == 12
    by = {(t["task"]["id"], t["arm"]): t for t in tries}
    delivery = {arm: by[("delivery", arm)] for arm in ("candidate", "production", "none", "control")}
    assert {m["title"] for m in delivery["candidate"]["memories"]} == {scene.login.title, scene.dates.title}
    assert [m["title"] for m in delivery["production"]["memories"]] == [scene.login.title]
    assert delivery["none"]["memories"] == [] and delivery["control"]["memories"] == []
    assert delivery["candidate"]["release"] == scene.candidate and delivery["production"]["release"] == scene.production
    block = delivery["candidate"]["system_block"]
    assert scene.dates.content in block and delivery["candidate"]["memory_tokens"] == token_estimate(block) > 0
    assert delivery["control"]["system_block"] == "" and delivery["control"]["memory_tokens"] == 0
    assert delivery["control"]["extra_tokens"] == delivery["candidate"]["memory_tokens"]
    assert all(t["extra_tokens"] == 0 for t in tries if t["arm"] != "control")
    assert all(t["token_budget"] == 3000 and t["k"] == 1 and t["lease_seconds"] == 900 for t in tries)
    stored = EvalAttempt.objects.get(public_id=delivery["candidate"]["id"])
    assert stored.state == AttemptState.CLAIMED and stored.memory_tokens == delivery["candidate"]["memory_tokens"]
    assert [s["id"] for s in stored.served] == [m["id"] for m in delivery["candidate"]["memories"]]
    # Nothing left: no try, not done (every try is claimed, none recorded).
    assert _claim(client, ingest, run_id) == {
        "try": None,
        "done": False,
        "message": "No try to claim now: 12 claimed by a harness, offered again if not recorded within 900 s.",
    }


def test_a_task_is_never_served_the_lessons_learnt_from_its_own_task(client, bank, owner, tokens):
    review, ingest = tokens
    scene = releases_scene(bank, owner)
    MemoryItem.objects.filter(pk=scene.login.pk).update(source_task_id="past-orders")  # learnt from that task
    make_task_set(bank)  # the task "orders" leaves out the lessons of task id "past-orders"
    run_id = _create(client, review, release=scene.candidate, arms=["candidate", "production", "control"])
    served = {(t["task"]["id"], t["arm"]): t for t in _all_tries(client, ingest, run_id)}
    assert [m["title"] for m in served[("orders", "candidate")]["memories"]] == [scene.dates.title]
    assert served[("orders", "production")]["memories"] == []
    assert served[("orders", "control")]["extra_tokens"] == served[("orders", "candidate")]["memory_tokens"]
    assert len(served[("hours", "candidate")]["memories"]) == 2  # other tasks are served both


def test_a_task_is_never_served_the_lessons_of_a_past_run_of_its_text_without_a_task_id(client, bank, owner, tokens):
    review, ingest = tokens
    scene = releases_scene(bank, owner)
    # The login lesson was learnt from a past run of the same task, sent without a task id, spaced differently.
    past = experience_create(bank=bank, task="Log in and  list my order history on the shop. ")
    MemoryItem.objects.filter(pk=scene.login.pk).update(experience=past)
    task_set = make_task_set(bank)
    task_set.tasks.update(task_id="")  # only the text ties the tasks to their past runs
    run_id = _create(client, review, release=scene.candidate, arms=["candidate", "production"])
    served = {(t["task"]["id"], t["arm"]): t for t in _all_tries(client, ingest, run_id)}
    assert [m["title"] for m in served[("orders", "candidate")]["memories"]] == [scene.dates.title]
    assert served[("orders", "production")]["memories"] == []
    assert {m["title"] for m in served[("hours", "candidate")]["memories"]} == {scene.login.title, scene.dates.title}


def test_a_record_writes_a_trajectory_that_does_not_learn_and_fills_the_try(
    client, scene, tokens, broker_queue, django_capture_on_commit_callbacks
):
    review, ingest = tokens
    run_id = _create(client, review, release=scene.candidate)
    tries = _all_tries(client, ingest, run_id)
    delivery = next(t for t in tries if t["task"]["id"] == "delivery" and t["arm"] == "candidate")
    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        status, body = api(
            client, ingest, "post", f"/evaluations/{run_id}/tries/{delivery['id']}", {**ANSWER, "metadata": {"seed": 7}}
        )
    assert status == 201, body
    t = Trajectory.objects.get(public_id=body["trajectory"])
    assert body["try"] == delivery["id"] and body["check_passed"] is True
    assert body["progress"]["recorded"] == 1 and body["progress"]["known"] == 1
    assert (t.learn, t.task, t.task_id) == (False, "Pick the delivery date on the checkout form.", "eval:delivery")
    assert (t.prompt_tokens, t.completion_tokens, t.step_count) == (900, 40, len(factories.STEPS))
    assert t.metadata == {
        "seed": 7,
        "evaluation": {"run": run_id, "arm": "candidate", "try": delivery["id"], "number": 1, "task": "delivery"},
    }
    assert t.verdict == "success" and t.judgments.get().rationale.startswith("The task's check")
    attempt = EvalAttempt.objects.get(public_id=delivery["id"])
    assert attempt.state == AttemptState.RECORDED and attempt.trajectory == t and attempt.recorded_at is not None
    assert (attempt.steps, attempt.prompt_tokens, attempt.completion_tokens) == (t.step_count, 900, 40)
    assert try_outcome(attempt) is True
    run = EvalRun.objects.get(public_id=run_id)
    assert run.tries_recorded == 1 and run.last_activity_at is not None
    sent = [name for name, _ in queued_tasks(broker_queue, before)]
    assert "trajectories.process" in sent and "evaluation.results_refresh" in sent  # judged; results refreshed
    # A try without a check waits for its verdict: no refresh before it is known.
    orders = next(t for t in tries if t["task"]["id"] == "orders" and t["arm"] == "none")
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Your orders: none."}]
    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        status, body = api(
            client, ingest, "post", f"/evaluations/{run_id}/tries/{orders['id']}", {"messages": messages}
        )
    assert status == 201 and body["check_passed"] is None and body["progress"]["known"] == 1
    assert [name for name, _ in queued_tasks(broker_queue, before)] == ["trajectories.process"]
    assert try_outcome(EvalAttempt.objects.get(public_id=orders["id"])) is None


def test_a_recorded_try_is_never_overwritten_and_bad_bodies_change_nothing(client, scene, tokens):
    review, ingest = tokens
    run_id = _create(client, review, release=scene.candidate)
    first = _claim(client, ingest, run_id)["try"]
    url = f"/evaluations/{run_id}/tries/{first['id']}"
    bad = [
        ({"final_answer": "no steps"}, 422, "neither was given"),
        ({"steps": [], "messages": []}, 422, "not both"),
        ({**ANSWER, "task": "another task"}, 422, "task"),
        ({**ANSWER, "usage": {"prompt_tokens": -1}}, 422, "usage"),
        ({**ANSWER, "usage": {"tokens": 3}}, 422, "usage"),
        ({**ANSWER, "outcome": "maybe"}, 422, "outcome"),
        ({**ANSWER, "metadata": [1]}, 422, "metadata"),
    ]
    for body, status, words in bad:
        got, answer = api(client, ingest, "post", url, body)
        assert got == status and words in answer["detail"], (body, answer)
    status, answer = api(
        client, ingest, "post", f"/evaluations/{run_id}/tries/{'0' * 8}-0000-0000-0000-{'0' * 12}", ANSWER
    )
    assert (status, answer["code"]) == (404, "not_found")
    assert not Trajectory.objects.filter(learn=False).exists()
    assert EvalAttempt.objects.get(public_id=first["id"]).state == AttemptState.CLAIMED
    assert api(client, ingest, "post", url, ANSWER)[0] == 201
    status, answer = api(client, ingest, "post", url, {**ANSWER, "final_answer": "changed"})
    assert (status, answer["code"]) == (409, "try_recorded"), answer
    assert Trajectory.objects.filter(learn=False).count() == 1
    assert EvalRun.objects.get(public_id=run_id).tries_recorded == 1


def test_an_expired_claim_is_offered_again_and_an_abandoned_run_resumes(client, scene, tokens):
    review, ingest = tokens
    run_id = _create(client, review, arms=["none", "control"])
    first = _claim(client, ingest, run_id)["try"]
    second = _claim(client, ingest, run_id)["try"]
    assert first["id"] != second["id"]
    long_ago = timezone.now() - timedelta(seconds=901)
    EvalAttempt.objects.filter(public_id=first["id"]).update(claimed_at=long_ago)
    EvalRun.objects.filter(public_id=run_id).update(last_activity_at=long_ago)
    status, body = api(client, review, "get", f"/evaluations/{run_id}")
    assert body["progress"]["abandoned"] is True and body["progress"]["claimed"] == 2
    again = _claim(client, ingest, run_id)["try"]
    assert again["id"] == first["id"]  # the expired claim first, in plan order
    assert api(client, review, "get", f"/evaluations/{run_id}")[1]["progress"]["abandoned"] is False
    # The first harness comes back late: still not recorded, so its record is accepted; the second is refused.
    assert api(client, ingest, "post", f"/evaluations/{run_id}/tries/{first['id']}", ANSWER)[0] == 201
    status, answer = api(client, ingest, "post", f"/evaluations/{run_id}/tries/{first['id']}", ANSWER)
    assert (status, answer["code"]) == (409, "try_recorded")


def test_the_last_record_finishes_the_run_and_a_finished_run_refuses_more(
    client, scene, tokens, broker_queue, django_capture_on_commit_callbacks
):
    review, ingest = tokens
    run_id = _create(client, review, arms=["none", "control"])
    tries = _all_tries(client, ingest, run_id)
    for offered in tries[:-1]:
        assert api(client, ingest, "post", f"/evaluations/{run_id}/tries/{offered['id']}", ANSWER)[0] == 201
    assert EvalRun.objects.get(public_id=run_id).state == "open"
    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        last = api(
            client, ingest, "post", f"/evaluations/{run_id}/tries/{tries[-1]['id']}", {**ANSWER, "final_answer": "?"}
        )
    assert last[0] == 201
    run = EvalRun.objects.get(public_id=run_id)
    assert (run.state, run.tries_recorded) == ("finished", 6) and run.finished_at is not None
    assert ("evaluation.results_refresh", f"({run.pk},)") in queued_tasks(broker_queue, before)
    assert _claim(client, ingest, run_id) == {"try": None, "done": True, "message": "Every try is recorded."}
    status, answer = api(client, ingest, "post", f"/evaluations/{run_id}/tries/{tries[0]['id']}", ANSWER)
    assert (status, answer["code"]) == (409, "evaluation_finished") and "finished" in answer["detail"]
    status, answer = api(client, review, "post", f"/evaluations/{run_id}/cancel")
    assert (status, answer["code"]) == (409, "evaluation_finished")
    assert Trajectory.objects.filter(learn=False).count() == 6


def test_a_cancelled_run_is_audited_and_refuses_tries(client, scene, tokens):
    review, ingest = tokens
    run_id = _create(client, review, arms=["none", "control"])
    claimed = _claim(client, ingest, run_id)["try"]
    status, answer = api(client, ingest, "post", f"/evaluations/{run_id}/next", {"arm": "none"})
    assert (status, answer["code"]) == (422, "validation_error") and "arm: Extra inputs" in answer["detail"]
    status, answer = api(client, review, "post", f"/evaluations/{run_id}/cancel", {"force": True})
    assert (status, answer["code"]) == (422, "validation_error")
    assert EvalRun.objects.get(public_id=run_id).state == "open"
    assert api(client, ingest, "post", f"/evaluations/{run_id}/next", {})[1]["try"]["number"] == 1  # {} is no input
    status, answer = api(client, ingest, "post", f"/evaluations/{run_id}/cancel")
    assert (status, answer["code"]) == (403, "missing_scope")
    status, body = api(client, review, "post", f"/evaluations/{run_id}/cancel")
    assert status == 200 and body["state"] == "cancelled" and body["finished_at"] is not None
    assert AuditEvent.objects.get(action="evaluation.cancel").after == {"state": "cancelled", "recorded": 0, "total": 6}
    status, answer = api(client, ingest, "post", f"/evaluations/{run_id}/tries/{claimed['id']}", ANSWER)
    assert (status, answer["code"]) == (409, "evaluation_finished") and "cancelled" in answer["detail"]
    status, answer = api(client, ingest, "post", f"/evaluations/{run_id}/next")
    assert (status, answer["code"]) == (409, "evaluation_finished")
    assert api(client, review, "post", f"/evaluations/{run_id}/cancel")[0] == 200  # again: no change
    assert AuditEvent.objects.filter(action="evaluation.cancel").count() == 1
    assert not Trajectory.objects.filter(learn=False).exists()


def test_evaluation_retrievals_and_tries_never_reach_live_impact(client, scene, tokens):
    review, ingest = tokens
    served_before = {i.pk: i.served_count for i in MemoryItem.objects.filter(bank=scene.bank)}
    run_id = _create(client, review, release=scene.candidate)
    for offered in _all_tries(client, ingest, run_id):
        assert (
            api(
                client, ingest, "post", f"/evaluations/{run_id}/tries/{offered['id']}", {**ANSWER, "outcome": "success"}
            )[0]
            == 201
        )
    assert not RetrievalEvent.objects.filter(bank=scene.bank).exists()
    assert not RetrievalTally.objects.filter(bank=scene.bank).exists()
    assert {i.pk: i.served_count for i in MemoryItem.objects.filter(bank=scene.bank)} == served_before
    report = bank_impact(bank=scene.bank)
    assert report.treatment.retrievals == 0 and report.holdout.retrievals == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_harnesses_never_claim_the_same_try(bank):
    task_set = make_task_set(bank)
    run = evaluation_create(bank=bank, task_set=task_set, arms=["none", "control"], release=None, k=1)
    other: list = []

    def claim_elsewhere():
        try:
            other.append(try_claim(run=run))
        finally:
            connection.close()

    first = EvalAttempt.objects.filter(run=run).order_by("id").first()
    with transaction.atomic():  # another harness's claim of the first try, in flight: its row is locked
        EvalAttempt.objects.select_for_update().get(pk=first.pk)
        worker = threading.Thread(target=claim_elsewhere)
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive(), "the claim waited for the other harness's lock"
    assert other[0] is not None and other[0].pk != first.pk
    assert try_claim(run=run).pk == first.pk  # once free, the first try is claimed next
    assert EvalAttempt.objects.filter(run=run, state=AttemptState.CLAIMED).count() == 2


def test_a_task_without_text_is_served_nothing_rather_than_blocking_the_run(client, bank, owner, tokens):
    review, ingest = tokens
    scene = releases_scene(bank, owner)
    make_task_set(bank, tasks=[("blank", "   ", None)])
    run_id = _create(client, review, release=scene.candidate, arms=["candidate", "control"])
    tries = _all_tries(client, ingest, run_id)
    assert [(t["arm"], t["memories"], t["extra_tokens"]) for t in tries] == [("candidate", [], 0), ("control", [], 0)]


def test_a_try_reads_usage_as_the_trajectory_api_does(client, scene, tokens):
    review, ingest = tokens
    run_id = _create(client, review, release=scene.candidate, arms=["candidate", "none"])
    first, second, third = _all_tries(client, ingest, run_id)[:3]
    anthropic = {**ANSWER, "usage": {"input_tokens": 500, "output_tokens": 20, "cache_read_input_tokens": 100}}
    assert api(client, ingest, "post", f"/evaluations/{run_id}/tries/{first['id']}", anthropic)[0] == 201
    messages = {
        "messages": [
            {"role": "user", "content": "Pick the date."},
            {"role": "assistant", "content": "2026-05-03", "usage": {"input_tokens": 70, "output_tokens": 5}},
        ]
    }
    assert api(client, ingest, "post", f"/evaluations/{run_id}/tries/{second['id']}", messages)[0] == 201
    assert (
        api(client, ingest, "post", f"/evaluations/{run_id}/tries/{third['id']}", {"steps": factories.STEPS})[0] == 201
    )
    recorded = {a.public_id: a for a in EvalAttempt.objects.filter(run__public_id=run_id)}
    tokens_of = {key: (recorded[key].prompt_tokens, recorded[key].completion_tokens) for key in recorded}
    assert tokens_of[uuid.UUID(first["id"])] == (600, 20)  # cached prompt tokens are prompt tokens
    assert tokens_of[uuid.UUID(second["id"])] == (70, 5)  # the messages' own usage, summed
    assert tokens_of[uuid.UUID(third["id"])] == (None, None)  # not reported: unknown, not 0
