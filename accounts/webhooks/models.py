"""A bank's webhook subscriptions, each event delivered to one of them, and
each attempt at it (the delivery log). Imported by ``accounts.models``; the
foreign keys name their models as strings so this module imports nothing of it."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class WebhookSubscription(models.Model):
    """A receiver URL of one bank and the events it gets. The secret
    (``whsec_…``) signs every delivery; it is shown once, when made."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey("accounts.Bank", on_delete=models.CASCADE, related_name="webhook_subscriptions")
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    description = models.CharField(max_length=200, blank=True)
    secret = models.CharField(max_length=100)
    # Deliveries whose every attempt failed, since the last success; at RB_WEBHOOK_DISABLE_AFTER it is disabled.
    consecutive_failures = models.PositiveIntegerField(default=0)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=500, blank=True)
    # The Impact verdict this subscription was last told (impact.verdict is sent when it differs).
    last_verdict = models.CharField(max_length=40, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["bank", "created_at"])]

    def __str__(self) -> str:
        return self.url

    @property
    def enabled(self) -> bool:
        return self.disabled_at is None

    @property
    def secret_hint(self) -> str:
        return f"{self.secret[:10]}…"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SUCCEEDED = "succeeded", "Delivered"
    FAILED = "failed", "Failed"


class WebhookDelivery(models.Model):
    """One event for one subscription. ``public_id`` is the message id sent as
    ``webhook-id`` (the same on every attempt and redelivery, so a receiver
    can drop duplicates). ``round_start``: the attempt count when the current
    round of retries began (a redelivery starts a new round)."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    subscription = models.ForeignKey(WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=60)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    round_start = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["subscription", "created_at"]),
            models.Index(fields=["status", "next_attempt_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.subscription_id} ({self.status})"

    @property
    def message_id(self) -> str:
        return f"msg_{self.public_id.hex}"

    @property
    def last_attempt_private(self) -> bool:
        """Whether the latest attempt went to a private address (then the log hides when the next one is due)."""
        attempts = list(self.attempt_log.all())  # prefetched by the log
        return bool(attempts) and max(attempts, key=lambda a: a.number).private_target


def status_class(status_code: int | None) -> str:
    """What the log may say of an answer from a private address: "5xx", or "failed to connect"."""
    return f"{status_code // 100}xx" if status_code else "failed to connect"


class WebhookAttempt(models.Model):
    """One HTTP request of a delivery: the receiver's status code, or why there
    was none. ``private_target``: the address it went to is private (allowed
    by RB_WEBHOOK_ALLOW_PRIVATE); the log then shows its status class only, so
    it cannot serve as a port scanner of the internal network."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    private_target = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["number"]

    def __str__(self) -> str:
        return f"#{self.number}: {self.status_code or self.error}"

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def shown(self) -> str:
        """The outcome as the log shows it."""
        if self.private_target:
            return status_class(self.status_code)
        return str(self.status_code) if self.status_code else self.error
