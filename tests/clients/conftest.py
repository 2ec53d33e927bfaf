"""Fixtures for the client tests: a live server (pytest-django ``live_server``,
real HTTP) and a ``Client`` holding a token of the ``bank`` fixture."""

import pytest
from django.conf import settings

from memories.embedding.items import memory_item_embed_refresh
from memories.items.services import memory_item_create
from memories.review.decisions import memory_item_approve
from reasoningbank_client import Client, RetryPolicy
from tests.conftest import BrokerQueue

# Retries in tests: real, but short.
FAST_RETRY = RetryPolicy(max_attempts=3, backoff_base=0.05, backoff_max=0.2, max_total_delay=5.0)


@pytest.fixture
def rb_url(live_server) -> str:
    return live_server.url


@pytest.fixture
def client(rb_url, token):
    with Client(rb_url, token, retry=FAST_RETRY, timeout=60) as c:
        yield c


@pytest.fixture
def approved(owner):
    """Builder: an approved (and embedded) memory item of a bank."""

    def make(bank, title, description="", content=""):
        item = memory_item_create(bank=bank, title=title, description=description, content=content, author=owner)
        memory_item_embed_refresh(item_id=item.pk)  # what the worker does after the create
        item.refresh_from_db()
        return memory_item_approve(item=item, author=owner, confirm_duplicate=True)  # twins too: tests build many

    return make


@pytest.fixture
def cable_lesson(bank, approved):
    return approved(
        bank,
        "Use the coupon when buying the cheapest cable in the shop",
        "Shopping tasks with a coupon",
        "Sort by price, then apply the coupon on the cart page.",
    )


@pytest.fixture(autouse=True)
def broker_queue():
    """Remove the pipeline messages our recordings enqueue on the broker, so no later worker runs them."""
    queue = BrokerQueue(settings.CELERY_BROKER_URL)
    before = queue.snapshot()
    yield queue
    queue.remove_new(before)
    queue.client.close()
