"""Keeping items and experiences searchable (memories.embedding.items): refresh, the embed task, the
sweeper — against the real database."""

import numpy as np
import pytest

from memories.embedding.items import memory_item_embed_refresh
from memories.embedding.model import embed_text, item_embedding_hash
from memories.items.experiences import Experience, experience_create
from memories.items.models import MemoryItem
from memories.items.services import memory_item_create, memory_item_edit, memory_item_propose
from memories.review.decisions import memory_item_reject
from reasoningbank_site.errors import Invalid
from tests.memories.lessons import DATES, LOGIN


def test_embed_refresh_is_idempotent(bank, owner):
    item = memory_item_create(bank=bank, author=owner, **LOGIN)
    memory_item_edit(item=item, author=owner, content="Sign in first, then open the invoices.")  # not re-embedded yet
    assert memory_item_embed_refresh(item_id=item.pk) is True
    assert memory_item_embed_refresh(item_id=item.pk) is False
    assert memory_item_embed_refresh(item_id=10**9) is False


def test_embed_task_runs_the_service(bank, owner):
    from memories.tasks import memory_item_embed_task

    item = memory_item_create(bank=bank, author=owner, **LOGIN)
    assert memory_item_embed_task.name == "memories.embed_item"
    memory_item_embed_task.apply(args=[item.pk])
    item.refresh_from_db()
    assert item.embedding_hash == item_embedding_hash(item)


def test_experience_create_embeds_the_task(bank):
    exp = experience_create(bank=bank, task="Sign in and download the latest invoice", task_id="t-9")
    exp = Experience.objects.get(pk=exp.pk)
    expected = embed_text("Sign in and download the latest invoice")
    assert float(np.dot(np.asarray(exp.embedding), expected)) > 0.999
    assert exp.task_id == "t-9"
    with pytest.raises(Invalid):
        experience_create(bank=bank, task="  ")


def test_sweeper_embeds_items_left_without_embedding(bank, owner):
    from memories.tasks import memory_items_embed_sweep_task

    lost = memory_item_create(bank=bank, author=owner, **LOGIN)
    memory_item_edit(
        item=lost, author=owner, content="Sign in first, then open the invoices."
    )  # its re-embed never ran
    stale = memory_item_propose(bank=bank, origin="success", **DATES)
    MemoryItem.objects.filter(pk=stale.pk).update(embedding_model="old-model")
    rejected = memory_item_create(bank=bank, author=owner, title="Rejected", description="d", content="c")
    memory_item_edit(item=rejected, author=owner, content="c, edited")
    memory_item_reject(item=rejected, author=owner)
    assert memory_items_embed_sweep_task.apply(kwargs={"limit": 50}).get() == 2
    for item in (lost, stale):
        item.refresh_from_db()
        assert item.embedding_hash == item_embedding_hash(item) and item.embedding_model != "old-model"
    assert MemoryItem.objects.get(pk=rejected.pk).embedding is None
    assert memory_items_embed_sweep_task.apply().get() == 0
