"""Webhook deliveries on a real Celery worker: the retries travel through the
broker with their back-off, and a receiver that answers 500 three times and
then 200 gets the event once (tests/accounts/test_webhooks.py runs the same
chain eagerly, for the many cases around it)."""

from __future__ import annotations

import pytest
from standardwebhooks import Webhook

from accounts.models import WebhookDelivery
from accounts.webhooks.subscriptions import webhook_subscription_create
from tests import factories
from tests.webhook_receiver import Receiver
from tests.worker import celery_broker, celery_worker, wait_for  # noqa: F401

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def eager_celery():
    """Off here: deliveries must travel through the broker to the real worker."""
    yield


@pytest.fixture
def celery_worker_env():
    # The receiver is on 127.0.0.1; a short back-off (the variable an operator sets) keeps the test to seconds.
    return {"RB_WEBHOOK_ALLOW_PRIVATE": "1", "RB_WEBHOOK_RETRY_BACKOFF": "0.2", "RB_WEBHOOK_TIMEOUT": "10"}


def test_a_receiver_failing_three_times_gets_the_event_once_from_the_worker(settings, bank, celery_worker):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True  # the subscription is checked in this process too
    trajectory = factories.make_done_trajectory(bank)
    receiver = Receiver(statuses=[500, 500, 500, 200]).start()
    try:
        issued = webhook_subscription_create(bank=bank, url=receiver.url, events="item.proposed")
        factories.propose_item(bank, trajectory)  # committed at once: the delivery is enqueued for the worker
        wait_for(lambda: receiver.accepted(), timeout=120, what="the receiver to accept the event")
        delivery = wait_for(
            lambda: WebhookDelivery.objects.filter(status="succeeded").first(), timeout=60, what="a delivery"
        )
    finally:
        receiver.stop()
    assert [r.answered for r in receiver.received] == [500, 500, 500, 200]
    assert Webhook(issued.secret).verify(receiver.accepted()[0].body, receiver.accepted()[0].headers)["type"] == (
        "item.proposed"
    )
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    assert delivery.attempts == 4 and [a.status_code for a in delivery.attempt_log.all()] == [500, 500, 500, 200]
