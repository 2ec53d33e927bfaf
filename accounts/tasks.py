"""Celery adapters for accounts housekeeping and webhook deliveries."""

from celery import shared_task

from accounts.tokens.usage import token_usage_compact
from accounts.webhooks.delivery import webhook_delivery_run
from accounts.webhooks.subscriptions import webhook_deliveries_sweep


@shared_task(name="accounts.compact_token_usage", ignore_result=True)
def compact_token_usage() -> None:
    token_usage_compact()


@shared_task(name="accounts.webhook_deliver", ignore_result=True)
def webhook_deliver(delivery_id: int, attempt: int) -> None:
    """One attempt (on the `webhooks` queue); a failed one with attempts left queues the next after its
    back-off, and one whose bank has its cap of attempts in flight queues itself again after a short wait."""
    follow = webhook_delivery_run(delivery_id=delivery_id, attempt=attempt)
    if follow is not None:
        webhook_deliver.apply_async((delivery_id, follow.attempt), countdown=follow.delay)


@shared_task(name="accounts.webhooks_sweep", ignore_result=True)
def webhooks_sweep() -> None:
    webhook_deliveries_sweep()
