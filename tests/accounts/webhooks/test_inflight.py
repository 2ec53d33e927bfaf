"""The per-bank cap on delivery attempts in flight: a bank whose slots are
all taken has its due delivery wait (pending, no attempt counted, queued
again after a short wait), another bank's delivery goes out meanwhile, and
the waiting one goes out once a slot is free. The slots are held here by
another database session, as another worker thread's attempts would."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import WebhookAttempt, WebhookDelivery
from accounts.webhooks.delivery import NextAttempt, webhook_delivery_run
from accounts.webhooks.inflight import bank_inflight_slot
from accounts.webhooks.subscriptions import webhook_events_emit, webhook_subscription_create
from tests import factories
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def webhook_settings(settings):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on 127.0.0.1
    settings.RB_WEBHOOK_TIMEOUT = 5.0
    settings.RB_WEBHOOK_INFLIGHT_PER_BANK = 2
    settings.RB_WEBHOOK_INFLIGHT_WAIT = 4.0
    return settings


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


@contextmanager
def slots_taken_elsewhere(bank_id: int, count: int) -> Iterator[None]:
    """Hold ``count`` of the bank's slots from other sessions, as other worker threads' attempts would: each
    thread (its own connection) takes one slot through ``bank_inflight_slot`` and keeps it until released."""
    release = threading.Event()
    taken = threading.Semaphore(0)

    def hold():
        try:
            with bank_inflight_slot(bank_id=bank_id) as got:
                assert got, "a free slot"
                taken.release()
                release.wait(30)
        finally:
            connection.close()  # the session ends: its locks go with it

    threads = [threading.Thread(target=hold, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
        assert taken.acquire(timeout=10)  # one at a time: each takes the next free slot
    try:
        yield
    finally:
        release.set()
        for thread in threads:
            thread.join(10)
            assert not thread.is_alive()


def _delivery_for(bank, url) -> WebhookDelivery:
    subscription = webhook_subscription_create(bank=bank, url=url, events="item.proposed").subscription
    webhook_events_emit(bank_id=bank.pk, event="item.proposed", payloads=[{"n": 1}])
    return WebhookDelivery.objects.get(subscription=subscription)


def test_a_bank_at_its_cap_waits_its_turn_while_another_bank_is_served(webhook_settings, receiver):
    busy, other = factories.make_bank(), factories.make_bank()
    waiting = _delivery_for(busy, receiver.url)
    served = _delivery_for(other, receiver.url)

    with slots_taken_elsewhere(busy.pk, 2):
        before = timezone.now()
        follow = webhook_delivery_run(delivery_id=waiting.pk, attempt=1)
        # The same attempt, queued again after about RB_WEBHOOK_INFLIGHT_WAIT s (±50 %); nothing sent.
        assert isinstance(follow, NextAttempt) and follow.attempt == 1 and 2.0 <= follow.delay <= 6.0
        assert receiver.received == []
        waiting.refresh_from_db()
        assert (waiting.status, waiting.attempts) == ("pending", 0)
        assert not WebhookAttempt.objects.filter(delivery=waiting).exists()
        # Not overdue for the sweeper while it waits.
        assert waiting.next_attempt_at >= before + timedelta(seconds=1.9)

        # Another bank's delivery is not held by the busy one.
        assert webhook_delivery_run(delivery_id=served.pk, attempt=1) is None
        served.refresh_from_db()
        assert served.status == "succeeded" and len(receiver.received) == 1

    # A slot is free again (its session ended): the waiting delivery goes out, as attempt 1.
    assert webhook_delivery_run(delivery_id=waiting.pk, attempt=1) is None
    waiting.refresh_from_db()
    assert (waiting.status, waiting.attempts) == ("succeeded", 1)
    assert len(receiver.received) == 2


def test_one_free_slot_is_enough(webhook_settings, receiver):
    bank = factories.make_bank()
    delivery = _delivery_for(bank, receiver.url)
    with slots_taken_elsewhere(bank.pk, 1):
        assert webhook_delivery_run(delivery_id=delivery.pk, attempt=1) is None
    delivery.refresh_from_db()
    assert delivery.status == "succeeded"


def test_a_slot_is_released_when_the_attempt_ends(webhook_settings):
    bank = factories.make_bank()
    with bank_inflight_slot(bank_id=bank.pk) as first:
        assert first
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
        assert cursor.fetchone()[0] == 0


def test_a_cap_of_zero_means_no_cap(webhook_settings, receiver):
    webhook_settings.RB_WEBHOOK_INFLIGHT_PER_BANK = 0
    bank = factories.make_bank()
    delivery = _delivery_for(bank, receiver.url)
    with slots_taken_elsewhere(bank.pk, 2):
        assert webhook_delivery_run(delivery_id=delivery.pk, attempt=1) is None
    delivery.refresh_from_db()
    assert delivery.status == "succeeded"


def test_a_duplicate_message_of_a_waiting_delivery_sends_nothing(webhook_settings, receiver):
    bank = factories.make_bank()
    delivery = _delivery_for(bank, receiver.url)
    assert webhook_delivery_run(delivery_id=delivery.pk, attempt=1) is None
    assert webhook_delivery_run(delivery_id=delivery.pk, attempt=1) is None  # already made
    assert len(receiver.received) == 1
