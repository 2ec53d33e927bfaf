"""A bank's webhooks (admins and owners): the list, adding one (then its
page, showing the secret once: post/redirect/get), a webhook's delivery log
with redelivery, enabling a disabled one, removing one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET

from accounts.access import bank_for_user
from accounts.models import Role, WebhookAttempt, WebhookDelivery, WebhookSubscription
from accounts.shown_once import shown_once_keep, shown_once_take
from accounts.webhooks.forms import WebhookForm
from accounts.webhooks.subscriptions import (
    webhook_delivery_redeliver,
    webhook_subscription_create,
    webhook_subscription_delete,
    webhook_subscription_enable,
)
from reasoningbank_site.errors import DomainError
from reasoningbank_site.security import no_store
from reasoningbank_site.views_helpers import post_action

LOG_LENGTH = 50


def _webhooks_page(request, bank, *, form=None):
    context = {
        "bank": bank,
        "form": form or WebhookForm(),
        "webhooks": WebhookSubscription.objects.filter(bank=bank).order_by("-created_at"),
    }
    return render(request, "accounts/bank_webhooks.html", context)


def _secret_key(webhook_public_id) -> str:
    return f"webhook-secret:{webhook_public_id}"


def _webhook(bank, webhook_id) -> WebhookSubscription:
    return get_object_or_404(WebhookSubscription.objects.select_related("bank__team"), bank=bank, public_id=webhook_id)


@login_required
@require_GET
def bank_webhooks(request, bank_id):
    bank, _me = bank_for_user(request, bank_id, role=Role.ADMIN)
    return _webhooks_page(request, bank)


@login_required
@post_action
def webhook_create(request, bank_id):
    """Add a webhook and redirect to its page, which shows its secret (once)."""
    bank, _me = bank_for_user(request, bank_id, role=Role.ADMIN)
    form = WebhookForm(request.POST)
    if form.is_valid():
        try:
            issued = webhook_subscription_create(bank=bank, actor=request.user, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            webhook = issued.subscription
            shown_once_keep(request, key=_secret_key(webhook.public_id), value=issued.secret)
            messages.success(request, f"Webhook for {webhook.url} added.")
            return redirect("accounts:webhook_detail", bank_id=bank.public_id, webhook_id=webhook.public_id)
    return _webhooks_page(request, bank, form=form)


@login_required
@require_GET
def webhook_detail(request, bank_id, webhook_id):
    """The webhook and its latest deliveries, each with its attempts' status
    codes; right after it was added, its signing secret (once)."""
    bank, _me = bank_for_user(request, bank_id, role=Role.ADMIN)
    webhook = _webhook(bank, webhook_id)
    deliveries = (
        WebhookDelivery.objects.filter(subscription=webhook)
        .order_by("-created_at", "-id")
        .prefetch_related(Prefetch("attempt_log", queryset=WebhookAttempt.objects.order_by("number")))[:LOG_LENGTH]
    )
    secret = shown_once_take(request, key=_secret_key(webhook.public_id))
    context = {"bank": bank, "webhook": webhook, "deliveries": deliveries, "log_length": LOG_LENGTH, "secret": secret}
    response = render(request, "accounts/webhook_detail.html", context)
    return no_store(response) if secret else response  # the secret is shown once: never cache it


@login_required
@post_action
def webhook_enable(request, bank_id, webhook_id):
    bank, _me = bank_for_user(request, bank_id, role=Role.ADMIN)
    webhook = _webhook(bank, webhook_id)
    webhook_subscription_enable(subscription=webhook, actor=request.user)
    messages.success(request, "Webhook enabled. Redeliver the events it missed from its log.")
    return redirect("accounts:webhook_detail", bank_id=bank.public_id, webhook_id=webhook.public_id)


@login_required
@post_action
def webhook_delete(request, bank_id, webhook_id):
    bank, _me = bank_for_user(request, bank_id, role=Role.ADMIN)
    webhook = _webhook(bank, webhook_id)
    webhook_subscription_delete(subscription=webhook, actor=request.user)
    messages.success(request, f"Webhook {webhook.url} removed.")
    return redirect("accounts:bank_webhooks", bank_id=bank.public_id)


@login_required
@post_action
def delivery_redeliver(request, bank_id, webhook_id, delivery_id):
    bank, _me = bank_for_user(request, bank_id, role=Role.ADMIN)
    webhook = _webhook(bank, webhook_id)
    delivery = get_object_or_404(WebhookDelivery, subscription=webhook, public_id=delivery_id)
    delivery.subscription = webhook
    try:
        webhook_delivery_redeliver(delivery=delivery, actor=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{delivery.event} queued for redelivery.")
    return redirect("accounts:webhook_detail", bank_id=bank.public_id, webhook_id=webhook.public_id)
