"""A worker killed in the middle of a judge call, with a real worker on the
embedded broker (the one `make run` uses): its trajectory is noticed by the
next sweep (the worker's database session is gone), not after RB_PIPELINE_STALE_SECONDS,
and is judged exactly once by the worker started after it, even though the
broker redelivers the killed worker's message too."""

from __future__ import annotations

import json
import re

import pytest
from django.conf import settings

from reasoningbank_site.celery import enqueue_on_commit
from tests import factories
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from tests.worker import (  # noqa: F401
    celery_broker,
    celery_worker,
    fake_llm_worker_env,
    wait_for,
    worker_running,
)
from trajectories.models import Judgment, Status, Trajectory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

JUDGE_PROMPT = "accomplished the task"


@pytest.fixture
def eager_celery():
    """Off here: tasks must travel through the broker to the real worker."""
    yield


@pytest.fixture
def celery_worker_env(fake_llm):
    # The sweep is played by the test (as beat would), so the row need not wait the default 20 s to count as
    # orphaned; the broker hands back an unacknowledged message after 5 s, so its redelivery races the sweep.
    return fake_llm_worker_env(fake_llm, RB_PIPELINE_ORPHAN_SECONDS="1", RB_BROKER_VISIBILITY_TIMEOUT="5")


def _judge_calls(fake_llm) -> int:
    return sum(JUDGE_PROMPT in request["messages"][-1]["content"] for request in fake_llm.requests)


@pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True)
def test_a_worker_killed_mid_judge_call_is_noticed_by_the_next_sweep_and_judged_once(
    fake_llm, celery_broker, celery_worker, celery_worker_env, client, tmp_path
):
    # The default bound: a lost worker's trajectory waits at most one sweep period after its grace.
    assert settings.RB_SWEEP_INTERVAL_SECONDS + settings.RB_PIPELINE_ORPHAN_SECONDS < 60
    assert settings.RB_PIPELINE_STALE_SECONDS >= 900  # the old rule is not what finds it here

    fake_llm.reply(JUDGE_SUCCESS, delay=60)  # the first judge call hangs: the worker is killed inside it
    fake_llm.responder = lambda messages: JUDGE_SUCCESS if JUDGE_PROMPT in messages[-1]["content"] else ITEMS_MD
    bank = factories.make_bank()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank)}"}
    body = {"task": "Find the opening hours of the library", "steps": factories.STEPS, "final_answer": "9-5"}
    response = client.post("/api/v1/trajectories", data=json.dumps(body), content_type="application/json", **auth)
    assert response.status_code == 202, response.content
    row = Trajectory.objects.get(public_id=response.json()["id"])

    wait_for(lambda: _judge_calls(fake_llm) == 1, timeout=60, what="the worker to call the judge")
    celery_worker.process.kill()
    celery_worker.process.wait(30)
    row.refresh_from_db()
    assert row.status == Status.JUDGING  # left behind by the killed worker

    with worker_running(celery_broker, celery_worker_env, tmp_path / "second-worker.log") as second:

        def judged() -> bool:
            row.refresh_from_db()
            if row.status == Status.DONE:
                return True
            enqueue_on_commit("trajectories.sweep")  # beat, every RB_SWEEP_INTERVAL_SECONDS
            return False

        wait_for(judged, timeout=120, interval=1.0, what="the trajectory of the killed worker to be done")
        swept = re.findall(
            r"whose worker was lost \(judging or distilling, its database session gone\): \[([\d, ]*)\]", second.log()
        )
        assert f"{row.pk}" in swept, second.log()

    assert Judgment.objects.filter(trajectory=row, source="llm").count() == 1
    assert row.verdict == "success" and row.experience_id
    # The killed call, then one judge call and one distill call: judged and distilled once.
    assert _judge_calls(fake_llm) == 2
    assert len(fake_llm.requests) == 3
