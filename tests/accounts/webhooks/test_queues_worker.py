"""One team's slow webhook receivers leave another team's judging alone.
Real workers, one per role of reasoningbank_site/workers.py, as production
runs them: deliveries go to the `webhooks` queue and its own worker, so the
pipeline's worker never holds a delivery; and a bank has at most
RB_WEBHOOK_INFLIGHT_PER_BANK attempts in flight, the rest waiting their turn."""

from __future__ import annotations

import pytest

from accounts.models import WebhookDelivery
from accounts.webhooks.subscriptions import webhook_events_emit, webhook_subscription_create
from reasoningbank_site import workers
from tests import factories
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_FAILURE
from tests.webhook_receiver import Receiver
from tests.worker import celery_broker, celery_workers, fake_llm_worker_env, wait_for  # noqa: F401
from trajectories.models import Status, Trajectory

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SLOW = 3.0  # seconds the receiver takes to answer each delivery
SUBSCRIPTIONS = 4
EVENTS = 6  # each sent to every subscription: 24 deliveries, more than the webhook worker's threads
CAP = 3


@pytest.fixture
def eager_celery():
    """Off here: tasks must travel through the broker to the real workers."""
    yield


@pytest.fixture
def celery_worker_roles():
    return (workers.PIPELINE_WORKER, workers.WEBHOOK_WORKER)


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(
        fake_llm,
        RB_WEBHOOK_ALLOW_PRIVATE="1",  # the receiver is on 127.0.0.1
        RB_WEBHOOK_TIMEOUT="10",
        RB_WEBHOOK_INFLIGHT_PER_BANK=str(CAP),
        RB_WEBHOOK_INFLIGHT_WAIT="0.5",
    )


def test_one_teams_slow_receivers_leave_another_teams_judging_alone(settings, fake_llm, celery_workers, client):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True  # the subscriptions are checked in this process too
    fake_llm.responder = lambda messages: (
        JUDGE_FAILURE if "accomplished the task" in messages[-1]["content"] else ITEMS_MD
    )
    flooding, judged = factories.make_bank(), factories.make_bank()  # two banks of two teams
    assert flooding.team_id != judged.team_id
    slow = Receiver(delay=SLOW).start()
    try:
        for n in range(SUBSCRIPTIONS):
            webhook_subscription_create(bank=flooding, url=f"{slow.url}/{n}", events="item.proposed")
        total = webhook_events_emit(
            bank_id=flooding.pk, event="item.proposed", payloads=[{"n": n} for n in range(EVENTS)]
        )
        assert total == SUBSCRIPTIONS * EVENTS
        wait_for(lambda: slow.in_flight, timeout=60, what="the slow receiver to be called")

        token = factories.make_token(judged)
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
        trajectory = Trajectory.objects.get(bank=judged)

        def judged_or_stopped():
            trajectory.refresh_from_db()
            return trajectory.verdict or trajectory.status == Status.NEEDS_ATTENTION

        wait_for(judged_or_stopped, timeout=180, what="the pipeline worker to judge the other team's trajectory")
        pending = WebhookDelivery.objects.filter(subscription__bank=flooding, status="pending").count()
        assert trajectory.verdict == "failure", trajectory.status_detail
        # Judged while most of the flood still waits: it never queued behind the deliveries.
        assert pending >= total // 2, f"judged only once {total - pending} of {total} deliveries were made"

        # The flood is delivered in full, each at its first attempt (waiting for a slot is no attempt),
        # never more than the cap at once.
        wait_for(
            lambda: WebhookDelivery.objects.filter(subscription__bank=flooding, status="succeeded").count() == total,
            timeout=180,
            what="every delivery of the flooding bank to succeed",
        )
        wait_for(
            lambda: Trajectory.objects.filter(pk=trajectory.pk, status=Status.DONE).exists(),
            timeout=180,
            what="the other team's trajectory to be distilled too",
        )
    finally:
        slow.stop()
    assert set(WebhookDelivery.objects.filter(subscription__bank=flooding).values_list("attempts", flat=True)) == {1}
    assert len(slow.received) == total
    assert slow.most_in_flight <= CAP
    # Each task ran on its own role's worker.
    webhook_log = celery_workers[workers.WEBHOOK_WORKER.name].log()
    pipeline_log = celery_workers[workers.PIPELINE_WORKER.name].log()
    assert "Task accounts.webhook_deliver[" in webhook_log and "Task trajectories.process[" not in webhook_log
    assert "Task trajectories.process[" in pipeline_log and "Task accounts.webhook_deliver[" not in pipeline_log
