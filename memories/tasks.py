"""Celery adapters for memories: take ids, call one service."""

from celery import shared_task

from memories.services import memory_item_embed_refresh


@shared_task(name="memories.embed_item", ignore_result=True, acks_late=True)
def memory_item_embed(item_id: int) -> bool:
    """(Re-)embed one memory item. Idempotent: the service skips an item whose
    embedding already matches its text and model."""
    return memory_item_embed_refresh(item_id=item_id)
