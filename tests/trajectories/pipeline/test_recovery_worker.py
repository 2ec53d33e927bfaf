"""Nothing stuck, with a real worker: an LLM down longer than the
retry budget, then back → every trajectory finishes with no human action; a
publish lost to a frozen Redis → the dispatcher sends it once Redis returns,
processed once; a database that refuses the worker → its task is retried,
not discarded, and runs once the database is back. Beat is played by the
test: it publishes the sweep and dispatch tasks, which travel on the
maintenance queue to the same worker."""

from __future__ import annotations

import json
import os
import re
import signal

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from memories.items.models import MemoryItem
from reasoningbank_site import celery as celery_module
from reasoningbank_site.celery import enqueue_on_commit
from tests import factories
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from tests.worker import celery_broker, celery_worker, fake_llm_worker_env, wait_for  # noqa: F401
from trajectories.models import Judgment, Status, Trajectory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def eager_celery():
    """Off here: tasks must travel through the broker to the real worker."""
    yield


@pytest.fixture
def celery_worker_env(fake_llm):
    # Small budgets and back-offs (the same variables an operator sets), so the test takes seconds.
    return fake_llm_worker_env(
        fake_llm,
        RB_LLM_MAX_RETRIES="1",
        RB_LLM_RETRY_BACKOFF="0.2",
        RB_LLM_RETRY_BACKOFF_MAX="0.5",
        RB_LLM_RESUME_AFTER="1",
        RB_DB_RETRY_BACKOFF="1",
        RB_DB_RETRY_BACKOFF_MAX="2",
    )


def _answer_everything(fake_llm) -> None:
    fake_llm.responder = lambda messages: (
        JUDGE_SUCCESS if "accomplished the task" in messages[-1]["content"] else ITEMS_MD
    )


def _ingest(client, n: int) -> list[Trajectory]:
    bank = factories.make_bank()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank)}"}
    ids = []
    for i in range(n):
        body = {"task": f"Find the opening hours of library {i}", "steps": factories.STEPS, "final_answer": "9-5"}
        response = client.post("/api/v1/trajectories", data=json.dumps(body), content_type="application/json", **auth)
        assert response.status_code == 202, response.content
        ids.append(response.json()["id"])
    return list(Trajectory.objects.filter(public_id__in=ids))


def _finished(worker, task_name: str) -> int:
    """How many ``task_name`` tasks the worker has finished (its log says so for each)."""
    return len(re.findall(rf"Task {re.escape(task_name)}\[[^\]]+\] succeeded", worker.log()))


def _all(rows: list[Trajectory], predicate) -> bool:
    for row in rows:
        row.refresh_from_db()
    return all(predicate(row) for row in rows)


def test_llm_down_longer_than_the_budget_then_back_every_trajectory_finishes(fake_llm, celery_worker, client):
    fake_llm.down = True
    rows = _ingest(client, 3)
    wait_for(
        lambda: _all(rows, lambda t: t.status == Status.AWAITING_LLM and t.retry_at is not None),
        timeout=60,
        what="the judge to run out of retries and park every trajectory",
    )
    assert [t.judge_attempts for t in rows] == [2, 2, 2]  # the budget: 1 retry
    assert all("gave up after 2 attempts" in t.status_detail and "503" in t.status_detail for t in rows)
    calls_while_down = len(fake_llm.requests)
    assert calls_while_down == 6

    # Still down: a sweep probes the endpoint once and resumes nothing. The resume time is moved
    # to now rather than waited for.
    Trajectory.objects.filter(pk__in=[t.pk for t in rows]).update(retry_at=timezone.now())
    swept = _finished(celery_worker, "trajectories.sweep")
    enqueue_on_commit("trajectories.sweep")
    wait_for(lambda: fake_llm.probes >= 1, timeout=60, what="the sweeper to probe the endpoint")
    wait_for(lambda: _finished(celery_worker, "trajectories.sweep") > swept, timeout=60, what="the sweep to finish")
    assert len(fake_llm.requests) == calls_while_down
    assert _all(rows, lambda t: t.status == Status.AWAITING_LLM)

    # The endpoint is back: beat's next sweeps resume them; nobody clicks anything.
    fake_llm.down = False
    _answer_everything(fake_llm)

    def finished() -> bool:
        if _all(rows, lambda t: t.status == Status.DONE):
            return True
        enqueue_on_commit("trajectories.sweep")
        return False

    wait_for(finished, timeout=90, interval=2.0, what="every trajectory to finish after the endpoint came back")
    assert all(t.verdict == "success" and t.experience_id for t in rows)
    # The same two lessons from each of the three: two items, each seen again in the two later trajectories.
    items = MemoryItem.objects.filter(bank=rows[0].bank)
    assert sorted(items.values_list("support_count", flat=True)) == [2, 2]
    assert Judgment.objects.filter(trajectory__in=rows, source="llm").count() == 3
    assert len(fake_llm.requests) == calls_while_down + 6  # one judge and one distill call each, no more
    assert ".> maintenance" in celery_worker.log()  # a worker started without -Q consumes the sweeper's queue


@pytest.mark.parametrize("celery_broker", ["redis"], indirect=True)
def test_a_publish_lost_to_a_frozen_redis_is_dispatched_after_it_returns(
    fake_llm, celery_broker, celery_worker, client, settings, monkeypatch
):
    settings.RB_BROKER_RETRY_AFTER = 1.0
    monkeypatch.setitem(celery_module._broker_down_until, "until", 0.0)
    _answer_everything(fake_llm)
    os.kill(celery_broker.process.pid, signal.SIGSTOP)
    try:
        rows = _ingest(client, 3)
    finally:
        os.kill(celery_broker.process.pid, signal.SIGCONT)
    assert _all(rows, lambda t: t.enqueued_at is None)  # nothing reached the broker: left to the dispatcher

    monkeypatch.setitem(celery_module._broker_down_until, "until", 0.0)  # this process's back-off is over
    enqueue_on_commit("trajectories.dispatch")  # beat, a few seconds later
    wait_for(lambda: _all(rows, lambda t: t.status == Status.DONE), timeout=60, what="the dispatched trajectories")
    # (A publish that timed out may still land once Redis thaws: then that row's second task finds it done.)
    assert "dispatcher: published" in celery_worker.log()
    assert Judgment.objects.filter(trajectory__in=rows, source="llm").count() == 3
    assert len(fake_llm.requests) == 6  # processed once each
    dispatched = _finished(celery_worker, "trajectories.dispatch")
    enqueue_on_commit("trajectories.dispatch")
    wait_for(
        lambda: _finished(celery_worker, "trajectories.dispatch") > dispatched,
        timeout=60,
        what="the second dispatch to finish",
    )
    assert celery_worker.log().count("dispatcher: published") == 1  # nothing left to send


def _alter_database(sql: str) -> None:
    """Run ``sql`` from the server's maintenance database (a database cannot refuse its own session)."""
    params = {k: v for k, v in connection.get_connection_params().items() if k in ("host", "port", "user", "password")}
    with psycopg.connect(**params, dbname="postgres", autocommit=True) as admin:
        admin.execute(sql)


@pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True)
def test_a_task_that_finds_the_database_down_is_retried_not_discarded(fake_llm, celery_worker, client):
    _answer_everything(fake_llm)
    name = connection.settings_dict["NAME"]
    connection.ensure_connection()  # this test's own session stays open; the worker's new ones are refused
    _alter_database(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
    try:
        rows = _ingest(client, 1)
        wait_for(
            lambda: celery_worker.log().count("OperationalError") >= 2 and " retry: Retry in " in celery_worker.log(),
            timeout=90,
            what="the worker to retry the task while the database refuses it",
        )
        assert _all(rows, lambda t: t.status == Status.RECEIVED)
    finally:
        _alter_database(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    wait_for(lambda: _all(rows, lambda t: t.status == Status.DONE), timeout=60, what="the task to run once it is back")
    assert len(fake_llm.requests) == 2
