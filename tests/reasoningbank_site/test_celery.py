"""A real task through a real worker process and a real broker."""

import pytest

from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_create, memory_item_edit
from tests import factories
from tests.worker import celery_broker, celery_worker, celery_worker_env, wait_for  # noqa: F401

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_worker_embeds_a_proposed_item_enqueued_on_commit(celery_worker):
    bank = factories.make_bank()
    item = memory_item_create(
        bank=bank,
        title="Confirm a form submission from the page",
        description="Use after submitting a web form.",
        content="Read the page for a confirmation",
    )
    # An edit of its text: embedded by the worker, enqueued on commit (a new item is embedded inline).
    item = memory_item_edit(
        item=item,
        author=None,
        content="Read the page for a confirmation or an inline error before reporting success.",
    )
    assert item.status == ItemStatus.PROPOSED
    assert item.embedding is None, "an edited item is embedded by the worker, not inline"

    def embedded():
        row = MemoryItem.objects.filter(pk=item.pk).values("embedding", "embedding_model").get()
        return row if row["embedding"] is not None else None

    row = wait_for(embedded, timeout=60, what="the worker to embed the item")
    assert len(row["embedding"]) == 384
    assert row["embedding_model"]
    log = celery_worker.log()
    assert "memories.embed_item" in log and "succeeded" in log
    # It went through the broker under test (its address is in the worker's banner), not the dev data dir's.
    assert celery_worker.broker.url.split("//")[1] in log


def test_a_worker_loads_the_embedding_model_when_it_starts(celery_worker):
    # No task sent: the worker_process_init hook loads it, so the first task does not wait for it.
    line = wait_for(
        lambda: next((ln for ln in celery_worker.log().splitlines() if "embedding model loaded in" in ln), None),
        timeout=90,
        what="the worker to load the embedding model",
    )
    assert "] received" not in celery_worker.log(), line  # no task ran: the start-up hook did it
