"""The Impact page's queued per-item table, end to end: the page queues it,
a real Celery worker (tests/worker.py) computes it from the broker, and the
page's fragment, polled, then swaps the table in."""

from __future__ import annotations

import time

import pytest

from tests.trajectories.impact.test_item_tables import afresh, page, shown
from tests.trajectories.impact.test_rollups import history
from tests.worker import celery_broker, celery_worker, celery_worker_env, wait_for  # noqa: F401
from trajectories.impact import item_tables

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True),
]


@pytest.fixture
def eager_celery():
    """Off here: the task must travel through the broker to the real worker."""
    yield


def test_a_worker_computes_the_queued_table_and_the_polled_fragment_swaps_it_in(
    client, owner, bank, monkeypatch, celery_worker
):
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)  # a big bank's path, on a small one
    history(bank, seed=15)
    client.force_login(owner)
    assert page(client, bank, "all").context["items_pending"]  # queued, not computed on the request
    url = f"/banks/{bank.public_id}/impact/items/?days=all&started={int(time.time())}"

    def polled():
        response = client.get(url)
        assert response.status_code == 200
        return b'id="item-outcomes"' in response.content and response

    swapped = wait_for(polled, timeout=60, what="the worker to store the per-item table")
    assert b"hx-trigger" not in swapped.content
    assert shown(page(client, bank, "all").context["items"]) == afresh(bank, None)[0] != []
