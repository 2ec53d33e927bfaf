"""End to end through a real worker process: ingest over the API → the
worker judges and distills against the fake LLM → items proposed."""

import pytest

from memories.items.models import ItemOrigin, ItemStatus, MemoryItem
from tests import factories
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_FAILURE
from tests.worker import celery_broker, celery_worker, fake_llm_worker_env, wait_for  # noqa: F401
from trajectories.models import Status, Trajectory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def eager_celery():
    """Off here: tasks must travel through the broker to the real worker."""
    yield


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


def test_ingested_trajectory_is_judged_and_distilled_by_the_worker(fake_llm, celery_worker, client):
    fake_llm.responder = lambda messages: (
        JUDGE_FAILURE if "accomplished the task" in messages[-1]["content"] else ITEMS_MD
    )
    bank = factories.make_bank()
    token = factories.make_token(bank)
    response = client.post(
        "/api/v1/trajectories",
        data={
            "task": "Find the Sunday opening hours of the city library.",
            "steps": factories.STEPS,
            "final_answer": "Sundays 9-12",
        },
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 202, response.content
    trajectory = Trajectory.objects.get(bank=bank)

    def finished():
        trajectory.refresh_from_db()
        return trajectory.status in (Status.DONE, Status.NEEDS_ATTENTION)

    wait_for(finished, timeout=120, what="the worker to judge and distill the trajectory")
    assert trajectory.status == Status.DONE, trajectory.status_detail
    assert trajectory.verdict == "failure"
    items = MemoryItem.objects.filter(bank=bank, experience=trajectory.experience)
    assert items.count() == 2
    assert all(i.status == ItemStatus.PROPOSED and i.origin == ItemOrigin.FAILURE for i in items)
    assert len(fake_llm.requests) == 2
    assert "trajectories.process" in celery_worker.log()

    # A batch is one message; the worker fans it out to one trajectories.process per trajectory.
    response = client.post(
        "/api/v1/trajectories/batch",
        data={"trajectories": [{"task": f"Batch task {n}", "steps": factories.STEPS} for n in range(2)]},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200 and response.json()["accepted"] == 2, response.content
    batch = Trajectory.objects.filter(bank=bank, task__startswith="Batch task")
    wait_for(
        lambda: all(t.status in (Status.DONE, Status.NEEDS_ATTENTION) for t in batch.all()),
        timeout=120,
        what="the worker to judge and distill the batch",
    )
    assert [(t.status, t.verdict) for t in batch.all()] == [(Status.DONE, "failure")] * 2
    assert len(fake_llm.requests) == 6  # each judged and distilled once
    assert "trajectories.process_many" in celery_worker.log()
