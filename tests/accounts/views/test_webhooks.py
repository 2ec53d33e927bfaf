"""A bank's webhook pages: the owner adds one (the secret shown once), sees
the delivery log with status codes (classes only for private receivers) and redelivers; lower roles get 403,
another team's members 404."""

import re
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from accounts.models import WebhookDelivery, WebhookSubscription
from accounts.webhooks.subscriptions import webhook_subscription_create
from tests import factories
from tests.webhook_receiver import Receiver


@pytest.fixture
def receiver(settings):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    settings.RB_WEBHOOK_RETRY_BACKOFF = 0.01
    settings.RB_WEBHOOK_MAX_ATTEMPTS = 2
    r = Receiver(statuses=[500, 500, 204]).start()
    yield r
    r.stop()


def page(bank, name="bank_webhooks", **kwargs):
    return reverse(f"accounts:{name}", kwargs={"bank_id": bank.public_id, **kwargs})


def test_owner_adds_sees_secret_once_then_log_and_redelivers(
    as_, people, bank, trajectory, receiver, eager_celery, django_capture_on_commit_callbacks
):
    client = as_(people["owner"])
    assert client.get(page(bank)).status_code == 200
    response = client.post(
        page(bank, "webhook_create"), {"url": receiver.url, "events": ["item.proposed"], "description": "CI"}
    )
    webhook = WebhookSubscription.objects.get()
    assert response.status_code == 302
    response = client.get(response["Location"])
    html = response.content.decode()
    secret = response.context["secret"]
    assert secret.startswith("whsec_") and secret in html and "no-store" in response["Cache-Control"]
    assert secret not in client.get(page(bank)).content.decode()  # once
    with django_capture_on_commit_callbacks(execute=True):
        factories.propose_item(bank, trajectory)
    detail = page(bank, "webhook_detail", webhook_id=webhook.public_id)
    html = client.get(detail).content.decode()
    assert "item.proposed" in html and html.count('class="attempt">5xx<') == 2 and "failed" in html  # 127.0.0.1
    delivery = WebhookDelivery.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            page(bank, "delivery_redeliver", webhook_id=webhook.public_id, delivery_id=delivery.public_id)
        )
    assert response.status_code == 302
    html = client.get(detail).content.decode()
    assert html.count('class="attempt">5xx<') == 2 and 'class="attempt">2xx<' in html and "delivered" in html
    assert [r.answered for r in receiver.received] == [500, 500, 204]


def test_adding_a_webhook_redirects_to_its_page_and_a_reload_neither_adds_nor_shows_the_secret(
    as_, people, bank, settings
):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    client = as_(people["owner"])
    form = {"url": "http://127.0.0.1:9/rb", "events": ["item.proposed"]}
    response = client.post(page(bank, "webhook_create"), form, follow=True)
    webhook = WebhookSubscription.objects.get()
    detail = page(bank, "webhook_detail", webhook_id=webhook.public_id)
    assert response.redirect_chain == [(detail, 302)]  # post/redirect/get: the address bar shows the webhook
    html = response.content.decode()
    secret = response.context["secret"]
    assert secret and secret in html and 'data-copy="webhook-secret"' in html
    assert "no-store" in response["Cache-Control"]
    reload = client.get(detail)  # what the browser's reload repeats
    assert reload.status_code == 200 and secret not in reload.content.decode()
    assert "no-store" not in reload.get("Cache-Control", "")
    assert WebhookSubscription.objects.count() == 1
    # Another webhook's page never shows this one's secret.
    client.post(page(bank, "webhook_create"), {**form, "url": "http://127.0.0.1:9/other"})
    other = WebhookSubscription.objects.exclude(pk=webhook.pk).get()
    assert secret not in client.get(page(bank, "webhook_detail", webhook_id=other.public_id)).content.decode()


@pytest.mark.parametrize(
    ("url", "message"),
    [("ftp://example.com/x", "http:// or https://"), ("http://169.254.169.254/", "link-local")],
)
def test_add_refuses_bad_urls_with_the_reason(as_, people, bank, settings, url, message):
    response = as_(people["admin"]).post(page(bank, "webhook_create"), {"url": url, "events": ["item.approved"]})
    assert response.status_code == 200 and message in response.content.decode()
    assert not WebhookSubscription.objects.exists()


def test_add_without_events_lists_them(as_, people, bank):
    response = as_(people["owner"]).post(page(bank, "webhook_create"), {"url": "https://example.com/"})
    assert "Choose at least one event: item.proposed" in response.content.decode()


def test_disabled_webhook_shows_its_notice_and_can_be_enabled(as_, people, bank, settings):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    webhook = webhook_subscription_create(bank=bank, url="http://127.0.0.1:9/x", events="item.approved").subscription
    WebhookSubscription.objects.filter(pk=webhook.pk).update(
        disabled_at="2030-01-01T00:00Z", disabled_reason="Disabled after 5 deliveries in a row failed"
    )
    client = as_(people["owner"])
    assert "Disabled after 5 deliveries" in client.get(page(bank)).content.decode()
    client.post(page(bank, "webhook_enable", webhook_id=webhook.public_id))
    assert WebhookSubscription.objects.get().enabled
    client.post(page(bank, "webhook_delete", webhook_id=webhook.public_id))
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize(("who", "status"), [("reviewer", 403), ("viewer", 403), ("stranger", 404)])
def test_only_admins_and_owners_manage_webhooks(as_, people, bank, settings, who, status):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    webhook = webhook_subscription_create(bank=bank, url="http://127.0.0.1:9/x", events="item.approved").subscription
    client = as_(people[who])
    assert client.get(page(bank)).status_code == status
    assert client.get(page(bank, "webhook_detail", webhook_id=webhook.public_id)).status_code == status
    response = client.post(page(bank, "webhook_create"), {"url": "http://127.0.0.1:9/y", "events": ["item.approved"]})
    assert response.status_code == status
    assert client.post(page(bank, "webhook_delete", webhook_id=webhook.public_id)).status_code == status
    assert WebhookSubscription.objects.count() == 1


def test_another_banks_webhook_is_404(as_, people, bank, other_bank, settings):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    theirs = webhook_subscription_create(bank=other_bank, url="http://127.0.0.1:9/x", events="item.approved")
    client = as_(people["owner"])
    assert client.get(page(bank, "webhook_detail", webhook_id=theirs.subscription.public_id)).status_code == 404
    assert client.post(page(bank, "webhook_delete", webhook_id=theirs.subscription.public_id)).status_code == 404


def test_anonymous_is_sent_to_login(client, bank):
    response = client.get(page(bank))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_settings_page_links_webhooks_for_admins(as_, people, bank):
    link = page(bank)
    assert link in as_(people["admin"]).get(page(bank, "bank_settings")).content.decode()
    assert link not in as_(people["viewer"]).get(page(bank, "bank_settings")).content.decode()


def test_a_private_receivers_log_shows_status_classes_only(
    as_, people, bank, trajectory, settings, eager_celery, django_capture_on_commit_callbacks
):
    """With private receivers allowed, the log must not tell a port scanner what answered inside the network."""
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    settings.RB_WEBHOOK_RETRY_BACKOFF = 0.01
    settings.RB_WEBHOOK_MAX_ATTEMPTS = 3
    settings.RB_WEBHOOK_DISABLE_AFTER = 1
    answering = Receiver(statuses=[503, 418, 200]).start()
    closed = Receiver().start()
    closed.stop()  # nothing listens on its port any more: connection refused
    try:
        webhook = webhook_subscription_create(bank=bank, url=answering.url, events="item.proposed").subscription
        refused = webhook_subscription_create(bank=bank, url=closed.url, events="item.proposed").subscription
        with django_capture_on_commit_callbacks(execute=True):
            factories.propose_item(bank, trajectory)
    finally:
        answering.stop()
    client = as_(people["owner"])
    html = client.get(page(bank, "webhook_detail", webhook_id=webhook.public_id)).content.decode()
    assert [a.status_code for a in WebhookDelivery.objects.get(subscription=webhook).attempt_log.all()] == [
        503,
        418,
        200,
    ]
    assert 'class="attempt">5xx<' in html and 'class="attempt">4xx<' in html and 'class="attempt">2xx<' in html
    # The receiver's random port and the page's UUIDs may contain "503" or "418" by chance: not a status shown.
    shown = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "", html)
    shown = shown.replace(str(urlsplit(answering.url).port), "")
    assert not any(code in shown for code in ("503", "418", ">200<")) and " ms" not in html
    html = client.get(page(bank, "webhook_detail", webhook_id=refused.public_id)).content.decode()
    assert html.count('class="attempt">failed to connect<') == 3
    assert "Errno" not in html and "refused" not in html.lower().replace("failed to connect", "") and " ms" not in html
    disabled = WebhookSubscription.objects.get(pk=refused.pk)
    assert "the last: failed to connect" in disabled.disabled_reason and "Errno" not in disabled.disabled_reason


def test_a_public_receivers_log_shows_exact_status_codes_and_errors(as_, people, bank, settings):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = False
    webhook = webhook_subscription_create(bank=bank, url="http://8.8.8.8/hook", events="item.proposed").subscription
    delivery = WebhookDelivery.objects.create(subscription=webhook, event="item.proposed", payload={}, attempts=2)
    delivery.attempt_log.create(number=1, status_code=503, duration_ms=120)
    delivery.attempt_log.create(number=2, error="ConnectError: [Errno 111] Connection refused", duration_ms=3)
    html = as_(people["owner"]).get(page(bank, "webhook_detail", webhook_id=webhook.public_id)).content.decode()
    assert 'class="attempt">503<' in html and "120 ms" in html and "[Errno 111] Connection refused" in html


def test_a_pending_delivery_to_a_private_receiver_hides_when_it_is_retried(as_, people, bank, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    webhook = webhook_subscription_create(bank=bank, url="http://127.0.0.1:9/x", events="item.proposed").subscription
    retry_at = timezone.now() + timedelta(minutes=5)
    delivery = WebhookDelivery.objects.create(
        subscription=webhook, event="item.proposed", payload={}, attempts=1, next_attempt_at=retry_at
    )
    delivery.attempt_log.create(number=1, error="ConnectError: [Errno 111] Connection refused", private_target=True)
    html = as_(people["owner"]).get(page(bank, "webhook_detail", webhook_id=webhook.public_id)).content.decode()
    assert 'class="attempt">failed to connect<' in html and "retrying" in html
    assert f"next {retry_at:%H:%M:%S}" not in html and "Errno" not in html
