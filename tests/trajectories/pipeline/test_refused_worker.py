"""Through a real worker and the fake LLM: a lesson a reviewer rejected, when
the distiller proposes it again, is recorded on the rejected item as a repeat
and never reaches the review queue; the distiller was shown it."""

import pytest

from memories.items.models import ItemStatus, MemoryItem, SupportKind
from memories.review.decisions import memory_item_reject
from tests import factories
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from tests.worker import celery_broker, celery_worker, fake_llm_worker_env, wait_for  # noqa: F401
from trajectories.models import Status, Trajectory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

REASON = "Official pages of this city are months out of date."


@pytest.fixture
def eager_celery():
    """Off here: tasks must travel through the broker to the real worker."""
    yield


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


def _send(client, token, task):
    response = client.post(
        "/api/v1/trajectories",
        data={"task": task, "steps": factories.STEPS, "final_answer": "Sundays 9-12"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 202, response.content
    trajectory = Trajectory.objects.get(public_id=response.json()["id"])

    def finished():
        trajectory.refresh_from_db()
        return trajectory.status in (Status.DONE, Status.NEEDS_ATTENTION)

    wait_for(finished, timeout=120, what="the worker to judge and distill the trajectory")
    assert trajectory.status == Status.DONE, trajectory.status_detail
    return trajectory


def test_a_rejected_lessons_repeat_never_reaches_the_queue(fake_llm, celery_worker, client, owner):
    fake_llm.responder = lambda messages: (
        JUDGE_SUCCESS if "accomplished the task" in messages[-1]["content"] else ITEMS_MD
    )
    bank = factories.make_bank()
    token = factories.make_token(bank)
    first = _send(client, token, "Find the Sunday opening hours of the city library.")
    rejected = MemoryItem.objects.get(bank=bank, title="Prefer the official source")
    memory_item_reject(item=rejected, author=owner, reason=REASON)

    second = _send(client, token, "Find the Saturday opening hours of the town museum.")

    # Nothing new is queued: one lesson repeats the rejected item, the other supports the queued one.
    queued = MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED)
    assert list(queued.values_list("title", flat=True)) == ["Answer in the asked format"]
    rejected.refresh_from_db()
    assert rejected.status == ItemStatus.REJECTED and rejected.status_reason == REASON
    (repeat,) = rejected.supports.filter(kind=SupportKind.REPEATED)
    assert repeat.trajectory_ids == [str(second.public_id)]
    assert "repeated a refused lesson" in second.status_detail
    # The second distillation's prompt named the rejected lesson and why.
    distill_prompts = [p for p in fake_llm.prompts if "accomplished the task" not in p]
    assert len(distill_prompts) == 2
    assert REASON not in distill_prompts[0] and REASON in distill_prompts[1]
    assert first.pk != second.pk
