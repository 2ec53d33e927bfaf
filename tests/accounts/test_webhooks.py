"""Webhooks delivered for real: a local HTTP receiver verifies every
signature with the standardwebhooks package; retries, back-off, disabling,
the address rules, the events and the rb_webhook command."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from standardwebhooks import Webhook

from accounts.errors import AccountsInvalid
from accounts.models import AuditEvent, WebhookDelivery, WebhookSubscription
from accounts.webhooks.addresses import ReceiverRefused
from accounts.webhooks.delivery import webhook_delivery_attempt
from accounts.webhooks.subscriptions import webhook_delivery_redeliver, webhook_subscription_create
from memories.items.models import ItemStatus
from memories.review.decisions import memory_item_approve, memory_item_archive
from tests import factories
from tests.webhook_receiver import Receiver
from trajectories.impact.announce import impact_verdicts_announce
from trajectories.models import Status
from trajectories.pipeline.transitions import NOT_DONE, trajectory_move


@pytest.fixture
def webhook_settings(settings):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on 127.0.0.1
    settings.RB_WEBHOOK_RETRY_BACKOFF = 0.01
    settings.RB_WEBHOOK_TIMEOUT = 5.0
    return settings


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


@pytest.fixture
def deliver(eager_celery, django_capture_on_commit_callbacks, webhook_settings):
    """Run ``act`` and the deliveries it enqueues on commit (eagerly: the real task chain, countdowns skipped)."""

    def run(act):
        with django_capture_on_commit_callbacks(execute=True):
            return act()

    return run


def subscribe(bank, url, events="item.proposed,item.approved,item.archived"):
    return webhook_subscription_create(bank=bank, url=url, events=events)


def verified(received, secret) -> dict:
    return Webhook(secret).verify(received.body, received.headers)


def test_item_events_are_signed_and_verify(bank, trajectory, receiver, deliver):
    issued = subscribe(bank, receiver.url)
    assert issued.secret.startswith("whsec_") and issued.subscription.secret == issued.secret
    item = deliver(lambda: factories.propose_item(bank, trajectory))
    deliver(lambda: memory_item_approve(item=item, author=None, confirm_duplicate=True))
    deliver(lambda: memory_item_archive(item=item, author=None))
    bodies = [verified(r, issued.secret) for r in receiver.received]
    assert [b["type"] for b in bodies] == ["item.proposed", "item.approved", "item.archived"]
    assert {b["data"]["item"]["id"] for b in bodies} == {str(item.public_id)}
    assert bodies[1]["data"]["item"]["status"] == ItemStatus.APPROVED
    assert bodies[0]["data"]["bank"] == {
        "id": str(bank.public_id),
        "team": "acme",
        "slug": bank.slug,
        "name": bank.name,
    }
    first = receiver.received[0]
    assert first.path == "/hooks" and first.headers["webhook-id"].startswith("msg_")
    assert {k.lower(): v for k, v in first.headers.items()}["content-type"] == "application/json"
    with pytest.raises(Exception, match="signature"):
        Webhook(subscribe(bank, receiver.url).secret).verify(first.body, first.headers)  # another secret fails


def test_only_subscribed_events_of_the_bank_are_sent(bank, other_bank, trajectory, receiver, deliver):
    subscribe(bank, receiver.url, events="item.archived")
    subscribe(other_bank, receiver.url, events="item.proposed")
    deliver(lambda: factories.propose_item(bank, trajectory))
    assert receiver.received == [] and not WebhookDelivery.objects.exists()


def test_a_rolled_back_change_sends_nothing(bank, trajectory, receiver, deliver):
    subscribe(bank, receiver.url)
    item = deliver(lambda: factories.propose_item(bank, trajectory))
    receiver.received.clear()
    with pytest.raises(Exception, match="cannot be archived"):  # proposed → archived is not a declared move
        deliver(lambda: memory_item_archive(item=item, author=None))
    assert receiver.received == []


def test_500_three_times_then_200_is_delivered_once_after_the_retries(bank, trajectory, deliver):
    receiver = Receiver(statuses=[500, 500, 500, 200]).start()
    try:
        issued = subscribe(bank, receiver.url)
        deliver(lambda: factories.propose_item(bank, trajectory))
    finally:
        receiver.stop()
    assert [r.answered for r in receiver.received] == [500, 500, 500, 200]
    assert len(receiver.accepted()) == 1 and verified(receiver.accepted()[0], issued.secret)["type"] == "item.proposed"
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1  # one message, four attempts
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "succeeded" and delivery.attempts == 4 and delivery.last_status_code == 200
    assert [a.status_code for a in delivery.attempt_log.all()] == [500, 500, 500, 200]
    assert WebhookSubscription.objects.get().consecutive_failures == 0


def test_a_duplicate_message_for_an_attempt_sends_nothing(bank, trajectory, receiver, deliver):
    subscribe(bank, receiver.url)
    deliver(lambda: factories.propose_item(bank, trajectory))
    delivery = WebhookDelivery.objects.get()
    assert webhook_delivery_attempt(delivery_id=delivery.pk, attempt=1) is None
    assert len(receiver.received) == 1


def test_failing_subscription_is_disabled_with_a_notice_then_enabled_and_redelivered(
    bank, trajectory, deliver, webhook_settings
):
    webhook_settings.RB_WEBHOOK_MAX_ATTEMPTS = 2
    webhook_settings.RB_WEBHOOK_DISABLE_AFTER = 2
    receiver = Receiver(statuses=[503]).start()
    try:
        issued = subscribe(bank, receiver.url)
        for n in range(3):
            deliver(lambda n=n: factories.propose_item(bank, trajectory, title=f"Lesson {n}"))
        subscription = WebhookSubscription.objects.get()
        assert len(receiver.received) == 4  # two deliveries × two attempts; the third event found it disabled
        assert not subscription.enabled and subscription.consecutive_failures == 2
        assert "2 deliveries in a row failed" in subscription.disabled_reason
        assert "the last: 5xx" in subscription.disabled_reason  # 127.0.0.1: its status class only
        assert AuditEvent.objects.filter(action="webhook.disable").count() == 1
        failed = list(WebhookDelivery.objects.filter(status="failed").order_by("pk"))
        assert len(failed) == 2
        with pytest.raises(AccountsInvalid.__mro__[1], match="disabled"):  # AccountsError: enable it first
            webhook_delivery_redeliver(delivery=failed[0])
        receiver.statuses = [200]
        from accounts.webhooks.subscriptions import webhook_subscription_enable

        webhook_subscription_enable(subscription=subscription)
        deliver(lambda: webhook_delivery_redeliver(delivery=failed[0]))
    finally:
        receiver.stop()
    last = receiver.received[-1]
    assert last.answered == 200 and last.headers["webhook-id"] == failed[0].message_id
    assert verified(last, issued.secret)["type"] == "item.proposed"
    redelivered = WebhookDelivery.objects.get(pk=failed[0].pk)
    assert redelivered.status == "succeeded" and redelivered.attempts == 3 and redelivered.round_start == 2


def test_a_receiver_that_becomes_refused_gets_nothing(bank, trajectory, receiver, deliver, webhook_settings):
    """The addresses are checked again before each attempt (DNS may answer differently than at subscription)."""
    webhook_settings.RB_WEBHOOK_MAX_ATTEMPTS = 1
    subscribe(bank, receiver.url)
    webhook_settings.RB_WEBHOOK_ALLOW_PRIVATE = False
    deliver(lambda: factories.propose_item(bank, trajectory))
    delivery = WebhookDelivery.objects.get()
    assert receiver.received == [] and delivery.status == "failed" and delivery.last_status_code is None
    assert "private or loopback" in delivery.last_error


def test_trajectory_needs_attention_is_announced_once(bank, receiver, deliver):
    issued = subscribe(bank, receiver.url, events="trajectory.needs_attention")
    t = factories.make_trajectory(bank)
    deliver(lambda: trajectory_move(t.pk, from_=NOT_DONE, to=Status.NEEDS_ATTENTION, detail="judge error: boom"))
    deliver(lambda: trajectory_move(t.pk, from_=NOT_DONE, to=Status.NEEDS_ATTENTION, detail="again"))  # restated
    (body,) = [verified(r, issued.secret) for r in receiver.received]
    assert body["type"] == "trajectory.needs_attention"
    assert body["data"]["trajectory"]["id"] == str(t.public_id) and body["data"]["trajectory"]["detail"] == (
        "judge error: boom"
    )


def test_impact_verdict_is_sent_when_it_appears_and_changes(bank, receiver, deliver):
    issued = subscribe(bank, receiver.url, events="impact.verdict")
    deliver(impact_verdicts_announce)  # no holdout: nothing to announce yet
    assert receiver.received == [] and WebhookSubscription.objects.get().last_verdict == "no_holdout"
    factories.with_holdout(bank)
    factories.make_arm(bank, "treatment", successes=270, failures=30, fraction=0.5)
    factories.make_arm(bank, "holdout", successes=90, failures=210, fraction=0.5)
    deliver(impact_verdicts_announce)
    deliver(impact_verdicts_announce)  # unchanged: not sent again
    (body,) = [verified(r, issued.secret) for r in receiver.received]
    assert body["type"] == "impact.verdict" and body["data"]["impact"]["verdict"] == "helps"
    assert body["data"]["impact"]["treatment"]["judged_retrievals"] == 300


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/hook", "must start with http:// or https://"),
        ("javascript:alert(1)", "must start with http:// or https://"),
        ("not a url", "must start with http:// or https://"),
        ("", "Give the receiver's URL"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/hook", "link-local"),
        ("http://metadata.google.internal/computeMetadata/v1/", "cloud metadata"),
        ("http://100.100.100.200/", "cloud metadata"),
        ("http://[::ffff:169.254.169.254]/", "link-local"),
        ("http://user:pw@example.com/", "no user name or password"),
        ("http://0.0.0.0/", "not a unicast address"),
        ("http://240.0.0.1/", "reserved address"),
        ("http://224.0.0.1/", "not a unicast address"),
        ("http://127.0.0.1:notaport/", "not a valid URL"),
    ],
)
def test_refused_urls_say_why_even_with_private_networks_allowed(bank, webhook_settings, url, message):
    with pytest.raises(ReceiverRefused, match=message):
        subscribe(bank, url)
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/hook", "http://10.1.2.3/hook", "http://[::1]/hook"])
def test_private_and_loopback_are_refused_by_default(bank, settings, url):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(ReceiverRefused, match="RB_WEBHOOK_ALLOW_PRIVATE"):
        subscribe(bank, url)


def test_unknown_event_is_refused_listing_the_valid_ones(bank, webhook_settings, receiver):
    with pytest.raises(AccountsInvalid) as refused:
        subscribe(bank, receiver.url, events="item.approved,item.deleted")
    assert "'item.deleted'" in refused.value.message
    for name in ("item.proposed", "item.approved", "item.archived", "trajectory.needs_attention", "impact.verdict"):
        assert name in refused.value.message
    with pytest.raises(AccountsInvalid, match="at least one event"):
        subscribe(bank, receiver.url, events=" , ")


# --- the command --------------------------------------------------------------------------


def test_rb_webhook_add_list_remove(bank, receiver, webhook_settings):
    out, err = StringIO(), StringIO()
    call_command(
        "rb_webhook", "add", "--bank", "acme/web-agents", "--url", receiver.url, "--events", "item.approved",
        stdout=out, stderr=err,
    )  # fmt: skip
    subscription = WebhookSubscription.objects.get()
    assert out.getvalue().strip() == subscription.secret and "shown once" in err.getvalue()
    listed = StringIO()
    call_command("rb_webhook", "list", "--bank", "acme/web-agents", stdout=listed)
    assert str(subscription.public_id) in listed.getvalue() and receiver.url in listed.getvalue()
    assert subscription.secret not in listed.getvalue()
    call_command("rb_webhook", "remove", str(subscription.public_id), stderr=StringIO())
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "--bank", "acme/web-agents", "--url", "http://127.0.0.1/", "--events", "nope"], "item.approved"),
        (["add", "--bank", "acme/web-agents", "--url", "gopher://x/", "--events", "item.approved"], "http://"),
        (["add", "--bank", "acme/nope", "--url", "http://127.0.0.1/", "--events", "item.approved"], "No bank"),
        (["remove", "not-an-id"], "not a webhook id"),
        (["remove", "00000000-0000-0000-0000-000000000000"], "No webhook"),
    ],
)
def test_rb_webhook_bad_input(bank, webhook_settings, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("rb_webhook", *args, stdout=StringIO(), stderr=StringIO())


def test_the_body_is_the_envelope(bank, trajectory, receiver, deliver):
    subscribe(bank, receiver.url)
    deliver(lambda: factories.propose_item(bank, trajectory))
    body = json.loads(receiver.received[0].body)
    assert set(body) == {"type", "timestamp", "data"} and set(body["data"]) == {"bank", "item"}
