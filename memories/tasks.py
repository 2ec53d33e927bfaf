"""Celery adapters for memories: take ids, call one service."""

from celery import shared_task

from memories.services import memory_item_embed_refresh, memory_items_embed_pending


@shared_task(name="memories.embed_item", ignore_result=True, acks_late=True)
def memory_item_embed(item_id: int) -> bool:
    """(Re-)embed one memory item. Idempotent: the service skips an item whose
    embedding already matches its text and model."""
    return memory_item_embed_refresh(item_id=item_id)


@shared_task(name="memories.embed_pending", ignore_result=True, acks_late=True)
def memory_items_embed_sweep(limit: int = 200) -> int:
    """Periodic sweeper (beat): embed items whose embedding was lost or is stale."""
    return memory_items_embed_pending(limit=limit)
