"""Writes of webhook subscriptions: add, remove, re-enable, redeliver, and
``webhook_events_emit``, which other apps' services call when something
happens to a bank."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.errors import AccountsConflict
from accounts.models import Bank
from accounts.webhooks.addresses import receiver_check
from accounts.webhooks.events import events_parse
from accounts.webhooks.models import DeliveryStatus, WebhookDelivery, WebhookSubscription
from reasoningbank_site.celery import enqueue_on_commit

SECRET_PREFIX = "whsec_"
MAX_SUBSCRIPTIONS_PER_BANK = 20
DESCRIPTION_MAX = 200
DELIVER_TASK = "accounts.webhook_deliver"


@dataclass(frozen=True)
class IssuedWebhook:
    subscription: WebhookSubscription
    secret: str  # shown once


def _new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


@transaction.atomic
def webhook_subscription_create(
    *, bank: Bank, url: str, events: str | Sequence[str], description: str = "", actor=None
) -> IssuedWebhook:
    """Subscribe ``url`` to ``events`` of ``bank`` with a new signing secret
    (returned once, ``whsec_`` + base64 of 32 random bytes). Raises
    AccountsInvalid for an unknown or missing event (the message lists the
    valid ones), ReceiverRefused for a URL that is not http or https, does not
    resolve or is refused (accounts.webhooks.addresses), AccountsConflict
    when the bank has MAX_SUBSCRIPTIONS_PER_BANK already."""
    names = events_parse(events)
    receiver = receiver_check(url)
    Bank.objects.select_for_update().filter(pk=bank.pk).first()  # one count at a time per bank
    if WebhookSubscription.objects.filter(bank=bank).count() >= MAX_SUBSCRIPTIONS_PER_BANK:
        raise AccountsConflict(f"A bank has at most {MAX_SUBSCRIPTIONS_PER_BANK} webhooks; remove one first.")
    secret = _new_secret()
    subscription = WebhookSubscription.objects.create(
        bank=bank,
        url=receiver.url,
        events=names,
        description=(description or "").strip()[:DESCRIPTION_MAX],
        secret=secret,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    audit_record(
        action=AuditAction.WEBHOOK_CREATE,
        bank=bank,
        user=actor,
        obj=subscription,
        after={"url": receiver.url, "events": names},
    )
    return IssuedWebhook(subscription=subscription, secret=secret)


@transaction.atomic
def webhook_subscription_delete(*, subscription: WebhookSubscription, actor=None) -> None:
    """Remove the subscription and its delivery log; queued attempts find nothing to send."""
    audit_record(
        action=AuditAction.WEBHOOK_DELETE,
        bank=subscription.bank,
        user=actor,
        obj=subscription,
        before={"url": subscription.url, "events": subscription.events},
    )
    subscription.delete()


@transaction.atomic
def webhook_subscription_enable(*, subscription: WebhookSubscription, actor=None) -> None:
    """Turn a disabled subscription back on, its failure count reset. Enabling an enabled one changes nothing."""
    changed = WebhookSubscription.objects.filter(pk=subscription.pk, disabled_at__isnull=False).update(
        disabled_at=None, disabled_reason="", consecutive_failures=0
    )
    if changed:
        subscription.refresh_from_db()
        audit_record(action=AuditAction.WEBHOOK_ENABLE, bank=subscription.bank, user=actor, obj=subscription)


def webhook_subscription_disable(*, subscription_id: int, reason: str) -> bool:
    """Disable the subscription with ``reason`` (the notice its owners see). True when this call disabled it."""
    with transaction.atomic():
        changed = WebhookSubscription.objects.filter(pk=subscription_id, disabled_at__isnull=True).update(
            disabled_at=timezone.now(), disabled_reason=reason[:500]
        )
        if changed:
            subscription = WebhookSubscription.objects.select_related("bank__team").get(pk=subscription_id)
            audit_record(
                action=AuditAction.WEBHOOK_DISABLE, bank=subscription.bank, obj=subscription, after={"reason": reason}
            )
    return bool(changed)


def _envelope(event: str, data: dict) -> dict:
    return {"type": event, "timestamp": timezone.now().isoformat(), "data": data}


def webhook_events_emit(*, bank_id: int, event: str, payloads: Sequence[dict] | Callable[[], Sequence[dict]]) -> int:
    """For each of ``payloads`` (an event's ``data``; or a function that
    makes them, called only when someone subscribes), one delivery to every
    enabled subscription of the bank to ``event``, sent by a worker after the
    caller's transaction commits (nothing is sent if it rolls back). The body
    is ``{"type", "timestamp", "data"}``. Returns how many deliveries were
    made. One query when the bank has no such subscription."""
    subscriptions = list(
        WebhookSubscription.objects.filter(bank_id=bank_id, disabled_at__isnull=True, events__contains=[event]).only(
            "pk"
        )
    )
    if not subscriptions:
        return 0
    return _deliveries_make(
        subscriptions=subscriptions, event=event, payloads=payloads() if callable(payloads) else payloads
    )


def _deliveries_make(*, subscriptions, event: str, payloads: Sequence[dict]) -> int:
    if not subscriptions:
        return 0
    now = timezone.now()
    deliveries = WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(subscription_id=s.pk, event=event, payload=_envelope(event, data), next_attempt_at=now)
            for data in payloads
            for s in subscriptions
        ]
    )
    for delivery in deliveries:
        enqueue_on_commit(DELIVER_TASK, delivery.pk, 1)
    return len(deliveries)


@transaction.atomic
def webhook_verdict_announce(*, bank_id: int, verdict: str, data: dict, first: bool = True) -> int:
    """Send impact.verdict with ``data`` to the enabled subscriptions of the
    bank that were last told another verdict than ``verdict``, and remember
    it. A subscription told nothing yet hears it only when ``first`` (a
    verdict appeared); otherwise it just remembers it. Returns how many
    deliveries were made."""
    stale = list(
        WebhookSubscription.objects.select_for_update()
        .filter(bank_id=bank_id, disabled_at__isnull=True, events__contains=["impact.verdict"])
        .exclude(last_verdict=verdict)
        .only("pk", "last_verdict")
    )
    WebhookSubscription.objects.filter(pk__in=[s.pk for s in stale]).update(last_verdict=verdict)
    told = [s for s in stale if first or s.last_verdict]
    return _deliveries_make(subscriptions=told, event="impact.verdict", payloads=[data])


@transaction.atomic
def webhook_delivery_redeliver(*, delivery: WebhookDelivery, actor=None) -> None:
    """Send a finished delivery again (same webhook-id, fresh signature), with
    a new round of retries. Raises AccountsConflict while it is still being
    delivered, or when its subscription is disabled."""
    subscription = WebhookSubscription.objects.select_related("bank__team").get(pk=delivery.subscription_id)
    if not subscription.enabled:
        raise AccountsConflict("This webhook is disabled: enable it before redelivering.")
    changed = WebhookDelivery.objects.filter(
        pk=delivery.pk, status__in=[DeliveryStatus.SUCCEEDED, DeliveryStatus.FAILED]
    ).update(status=DeliveryStatus.PENDING, round_start=F("attempts"), next_attempt_at=timezone.now())
    if not changed:
        raise AccountsConflict("This delivery is still being attempted; wait for it to finish.")
    delivery.refresh_from_db()
    audit_record(
        action=AuditAction.WEBHOOK_REDELIVER,
        bank=subscription.bank,
        user=actor,
        obj=subscription,
        after={"delivery": delivery.message_id, "event": delivery.event},
    )
    enqueue_on_commit(DELIVER_TASK, delivery.pk, delivery.attempts + 1)


# An attempt's claim holds its delivery this long past the request's timeout before the sweeper may resend it.
SWEEP_GRACE = timedelta(minutes=2)


def webhook_deliveries_sweep() -> int:
    """Queue again the pending deliveries whose next attempt is overdue by
    SWEEP_GRACE (its queued message was lost). A duplicate of a message that
    was only late is harmless: an attempt claims its delivery by compare-and-set."""
    overdue = WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, next_attempt_at__lt=timezone.now() - SWEEP_GRACE
    ).values_list("pk", "attempts")[:1000]
    rows = list(overdue)
    for pk, attempts in rows:
        enqueue_on_commit(DELIVER_TASK, pk, attempts + 1)
    return len(rows)
