"""Ingest does not wait for the broker: with the private Redis frozen by
SIGSTOP, POST /api/v1/trajectories answers and the row is stored (the one
publish tried gives up on its timeout; the next are not tried); thawed, the
sweeper enqueues them."""

import json
import logging
import os
import signal

import pytest
import redis

from reasoningbank_site import celery as celery_module
from tests import factories
from tests.worker import redis_broker  # noqa: F401
from trajectories.models import Status, Trajectory
from trajectories.pipeline.sweeper import pipeline_sweep

pytestmark = pytest.mark.django_db(transaction=True)  # on_commit publishes really run


def _queued(url: str) -> list[tuple[str, str]]:
    client = redis.Redis.from_url(url, socket_timeout=5)
    messages = [json.loads(raw) for raw in client.lrange("celery", 0, -1)]
    return [(m["headers"]["task"], m["headers"]["argsrepr"]) for m in messages]


def test_ingest_answers_while_redis_is_frozen_and_the_sweeper_enqueues_later(
    client,
    bank,
    redis_broker,
    settings,
    monkeypatch,
    caplog,
):
    settings.RB_BROKER_RETRY_AFTER = 60.0  # longer than the test: the frozen POSTs after the first are not tried
    monkeypatch.setitem(celery_module._broker_down_until, "until", 0.0)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank)}"}
    body = json.dumps({"task": "Find the opening hours", "steps": [{"thought": "look it up"}]})

    def post():
        return client.post("/api/v1/trajectories", data=body, content_type="application/json", **auth)

    # Warm: the broker answers and the task is published.
    warm = post()
    assert warm.status_code in (200, 201, 202), warm.content
    assert [name for name, _ in _queued(redis_broker.url)] == ["trajectories.process"]

    caplog.set_level(logging.INFO, logger="reasoningbank_site.celery")
    os.kill(redis_broker.process.pid, signal.SIGSTOP)
    try:
        # Each POST answers while Redis is still frozen: none waits for the broker to come back.
        frozen = [post() for _ in range(3)]
    finally:
        os.kill(redis_broker.process.pid, signal.SIGCONT)
    for response in frozen:
        assert response.status_code in (200, 201, 202), response.content
    ids = [response.json()["id"] for response in frozen]
    rows = Trajectory.objects.filter(public_id__in=ids)
    assert rows.count() == 3 and set(rows.values_list("status", flat=True)) == {Status.RECEIVED}
    assert set(rows.values_list("enqueued_at", flat=True)) == {None}  # each left to the dispatcher
    # The publish that timed out was written to the kept connection's socket: it may land once Redis
    # thaws (its row is unqueued all the same; the second task finds the stage done). No other did.
    assert len(_queued(redis_broker.url)) <= 2

    # The first frozen publish gave up on its socket timeout; the process then left the next ones to
    # the sweeper without trying the broker.
    records = [r for r in caplog.records if r.name == "reasoningbank_site.celery"]
    failed = [r for r in records if r.getMessage().startswith("could not enqueue")]
    skipped = [r for r in records if r.getMessage().startswith("broker recently unreachable")]
    assert len(failed) == 1 and len(skipped) == 2, [r.getMessage() for r in records]
    assert "timeout" in repr(failed[0].exc_info[1]).lower(), failed[0].exc_info

    monkeypatch.setitem(celery_module._broker_down_until, "until", 0.0)  # the back-off is over
    report = pipeline_sweep(stale_seconds=0)
    pks = set(rows.values_list("pk", flat=True))
    assert pks <= set(report.never_picked_up)
    queued = {args for name, args in _queued(redis_broker.url) if name == "trajectories.process"}
    assert {f"({pk},)" for pk in pks} <= queued
