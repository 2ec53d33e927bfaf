"""Celery adapters for accounts housekeeping."""

from celery import shared_task

from accounts.services import token_usage_compact


@shared_task(name="accounts.compact_token_usage", ignore_result=True)
def compact_token_usage() -> None:
    token_usage_compact()
