import numpy as np
import pytest
from django.db import connection

from memories.embeddings import embedding_model_name, item_embedding_hash
from memories.models import ItemStatus, MemoryItem
from memories.services import memory_item_approve, memory_item_create, memory_item_embed_refresh


@pytest.fixture
def approved(owner):
    """Builder: an approved item of a bank, embedded (as the worker does after the create)."""

    def make(bank, title, description="", content="", **kwargs):
        item = memory_item_create(
            bank=bank, title=title, description=description, content=content, author=owner, **kwargs
        )
        memory_item_embed_refresh(item_id=item.pk)
        item.refresh_from_db()
        return memory_item_approve(item=item, author=owner, confirm_duplicate=True)  # twins too: tests build many

    return make


def _unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def crowded(bank, other_bank):
    """150 items of another bank nearer the query than our 3: a plain HNSW scan
    (ef_search 40, no iterative scan) finds none of ours."""
    rng = np.random.default_rng(7)
    query = _unit(rng.normal(size=384))

    def add(target, n, spread):
        items = [
            MemoryItem(bank=target, title=f"item {i}", description="d", content="c", status=ItemStatus.APPROVED)
            for i in range(n)
        ]
        for item in items:
            item.embedding = _unit(query + spread * rng.normal(size=384) / np.sqrt(384))
            item.embedding_hash = item_embedding_hash(item)
            item.embedding_model = embedding_model_name()
        return MemoryItem.objects.bulk_create(items)

    add(other_bank, 150, 0.3)
    ours = add(bank, 3, 2.0)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memoryitem")
    return query, sorted(item.pk for item in ours)
