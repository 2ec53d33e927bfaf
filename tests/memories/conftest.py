import numpy as np
import pytest
from django.db import connection

from memories.embedding.items import memory_item_embed_refresh
from memories.items.services import memory_item_create
from memories.review.decisions import memory_item_approve
from tests.factories import approved_items_near, unit


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


@pytest.fixture
def crowded(bank, other_bank):
    """150 items of another bank nearer the query than our 3: a plain HNSW scan
    (ef_search 40, no iterative scan) finds none of ours."""
    rng = np.random.default_rng(7)
    query = unit(rng.normal(size=384))
    approved_items_near(other_bank, query, 150, 0.3, rng)
    ours = approved_items_near(bank, query, 3, 2.0, rng)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memoryitem")
    return query, sorted(item.pk for item in ours)
