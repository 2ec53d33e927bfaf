"""One attempt at a delivery: claim it, sign the body (Standard Webhooks),
POST it to the checked address, log the answer, and decide what follows (a
retry after a back-off, success, or failure, which may disable the
subscription)."""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import dataclass
from datetime import timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from standardwebhooks import Webhook

from accounts.webhooks.addresses import ReceiverRefused, address_is_private, receiver_addresses, receiver_parse
from accounts.webhooks.inflight import bank_inflight_slot
from accounts.webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookSubscription, status_class
from accounts.webhooks.subscriptions import webhook_subscription_disable

log = logging.getLogger(__name__)

RETRY_CAP_SECONDS = 3600.0
USER_AGENT = "ReasoningBank-Webhooks/1"


@dataclass(frozen=True)
class Answer:
    status_code: int | None
    error: str
    duration_ms: int
    private: bool = False  # sent to a private address: the log keeps its status class only

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@dataclass(frozen=True)
class NextAttempt:
    """The attempt to queue next, and after how many seconds."""

    attempt: int
    delay: float


def retry_delay(round_attempt: int) -> float:
    """Seconds to wait after the ``round_attempt``-th failed attempt of a round."""
    return min(settings.RB_WEBHOOK_RETRY_BACKOFF * 2 ** (round_attempt - 1), RETRY_CAP_SECONDS)


def body_for(delivery: WebhookDelivery) -> str:
    return json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False)


def signed_headers(*, secret: str, message_id: str, body: str) -> dict[str, str]:
    """The Standard Webhooks headers for ``body``, timestamped now."""
    now = timezone.now()
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(message_id, now, body),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }


def _post(subscription: WebhookSubscription, headers: dict[str, str], body: str) -> Answer:
    """POST to the first checked address of the receiver (Host and TLS name
    kept), reading no more of the answer than its status line and headers."""
    started = time.monotonic()

    private = False

    def answer(status_code: int | None, error: str = "") -> Answer:
        return Answer(status_code, error[:500], int((time.monotonic() - started) * 1000), private)

    try:
        receiver = receiver_parse(subscription.url)
        ip = receiver_addresses(receiver)[0]
    except ReceiverRefused as exc:
        return answer(None, exc.message)
    private = address_is_private(ip)
    host = f"[{ip}]" if ip.version == 6 else str(ip)
    url = f"{receiver.scheme}://{host}:{receiver.port}{receiver.path}"
    default_port = 443 if receiver.scheme == "https" else 80
    headers = {
        **headers,
        "host": receiver.host if receiver.port == default_port else f"{receiver.host}:{receiver.port}",
    }
    extensions = {"sni_hostname": receiver.host} if receiver.scheme == "https" else {}
    try:
        # trust_env off: a proxy from the environment would connect to the name, not the checked address.
        with httpx.Client(timeout=settings.RB_WEBHOOK_TIMEOUT, follow_redirects=False, trust_env=False) as client:
            request = client.build_request("POST", url, headers=headers, content=body.encode(), extensions=extensions)
            response = client.send(request, stream=True)
            response.close()  # the body is not read
            return answer(response.status_code)
    except httpx.TimeoutException:
        return answer(None, f"no answer within {settings.RB_WEBHOOK_TIMEOUT:g} s")
    except httpx.HTTPError as exc:
        return answer(None, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def webhook_delivery_run(*, delivery_id: int, attempt: int) -> NextAttempt | None:
    """Make attempt number ``attempt`` of the delivery (webhook_delivery_attempt)
    if it is still due and its bank has an attempt slot free
    (RB_WEBHOOK_INFLIGHT_PER_BANK). A bank at its cap gets nothing sent: the
    delivery stays pending with the same attempt number, due again after about
    RB_WEBHOOK_INFLIGHT_WAIT s (±50 %, so a backlog's messages spread out),
    and that attempt is returned to be queued after that wait. Otherwise
    returns the next attempt after a failed one's back-off, or None."""
    due = WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING, attempts=attempt - 1)
    bank_id = due.values_list("subscription__bank_id", flat=True).first()
    if bank_id is None:  # sent, finished or removed already (a duplicate message)
        return None
    with bank_inflight_slot(bank_id=bank_id) as free:
        if free:
            delay = webhook_delivery_attempt(delivery_id=delivery_id, attempt=attempt)
            return None if delay is None else NextAttempt(attempt + 1, delay)
    wait = settings.RB_WEBHOOK_INFLIGHT_WAIT * random.uniform(0.5, 1.5)
    # Not overdue for the sweeper while it waits its turn.
    postponed = due.update(next_attempt_at=timezone.now() + timedelta(seconds=wait))
    return NextAttempt(attempt, wait) if postponed else None


def webhook_delivery_attempt(*, delivery_id: int, attempt: int) -> float | None:
    """Make attempt number ``attempt`` of the delivery, if it is still due
    (pending, with ``attempt - 1`` attempts made: a compare-and-set, so a
    duplicate message sends nothing). Returns the seconds to wait before the
    next attempt when this one failed and the round has attempts left
    (RB_WEBHOOK_MAX_ATTEMPTS), else None. A round that ends in failure counts
    against the subscription, which is disabled after
    RB_WEBHOOK_DISABLE_AFTER failed deliveries in a row; a success resets the count."""
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, status=DeliveryStatus.PENDING, attempts=attempt - 1
    ).update(
        attempts=attempt,
        # Not overdue (for the sweeper) while this attempt may still be running.
        next_attempt_at=timezone.now() + timedelta(seconds=settings.RB_WEBHOOK_TIMEOUT * 2 + 30),
    )
    if not claimed:
        return None
    delivery = WebhookDelivery.objects.select_related("subscription").filter(pk=delivery_id).first()
    if delivery is None:  # its subscription was removed meanwhile
        return None
    subscription = delivery.subscription
    if subscription.enabled:
        body = body_for(delivery)
        answer = _post(
            subscription, signed_headers(secret=subscription.secret, message_id=delivery.message_id, body=body), body
        )
    else:
        answer = Answer(None, "the webhook is disabled", 0)
    round_attempt = attempt - delivery.round_start
    delay = None
    if answer.ok:
        outcome = {"status": DeliveryStatus.SUCCEEDED, "delivered_at": timezone.now(), "next_attempt_at": None}
    elif subscription.enabled and round_attempt < settings.RB_WEBHOOK_MAX_ATTEMPTS:
        delay = retry_delay(round_attempt)
        outcome = {"next_attempt_at": timezone.now() + timedelta(seconds=delay)}
    else:
        outcome = {"status": DeliveryStatus.FAILED, "next_attempt_at": None}
    with transaction.atomic():
        WebhookAttempt.objects.create(
            delivery=delivery,
            number=attempt,
            status_code=answer.status_code,
            error=answer.error,
            duration_ms=answer.duration_ms,
            private_target=answer.private,
        )
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            last_status_code=answer.status_code, last_error=answer.error, **outcome
        )
        if answer.ok:
            WebhookSubscription.objects.filter(pk=subscription.pk, consecutive_failures__gt=0).update(
                consecutive_failures=0
            )
        elif outcome.get("status") == DeliveryStatus.FAILED and subscription.enabled:
            _count_failure(subscription, delivery, answer)
    return delay


def _count_failure(subscription: WebhookSubscription, delivery: WebhookDelivery, answer: Answer) -> None:
    WebhookSubscription.objects.filter(pk=subscription.pk).update(consecutive_failures=F("consecutive_failures") + 1)
    failures = (
        WebhookSubscription.objects.filter(pk=subscription.pk).values_list("consecutive_failures", flat=True).first()
    )
    limit = settings.RB_WEBHOOK_DISABLE_AFTER
    if failures is not None and limit > 0 and failures >= limit:
        if answer.private:
            last = status_class(answer.status_code)
        else:
            last = f"HTTP {answer.status_code}" if answer.status_code else answer.error
        reason = (
            f"Disabled on {timezone.now():%Y-%m-%d %H:%M} UTC after {failures} deliveries in a row failed "
            f"(each after {settings.RB_WEBHOOK_MAX_ATTEMPTS} attempts; the last: {last}). "
            "Fix the receiver, then enable the webhook and redeliver what it missed."
        )
        if webhook_subscription_disable(subscription_id=subscription.pk, reason=reason):
            log.warning("webhook %s disabled: %s", subscription.public_id, reason)
