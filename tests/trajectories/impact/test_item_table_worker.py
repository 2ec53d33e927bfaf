"""The Impact page's queued per-item table, end to end: the page queues it
(missing, or outdated and shown meanwhile), a real Celery worker
(tests/worker.py) computes it from the broker, and the page's fragment,
polled, then swaps the new table in."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.core.cache import cache

from tests.trajectories.impact.test_item_table_queue import kept_key, rows
from tests.trajectories.impact.test_item_tables import afresh, flip_an_old_verdict, page, shown
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
    assert page(client, bank, "all").context["items_poll"].pending  # queued, not computed on the request
    url = f"/banks/{bank.public_id}/impact/items/?days=all&started={int(time.time())}"

    def polled():
        response = client.get(url)
        assert response.status_code == 200
        return b'id="item-outcomes"' in response.content and response

    swapped = wait_for(polled, timeout=60, what="the worker to store the per-item table")
    assert b"hx-trigger" not in swapped.content
    assert shown(page(client, bank, "all").context["items"]) == afresh(bank, None)[0] != []


def test_a_worker_recomputes_an_outdated_table_and_the_polled_fragment_swaps_the_new_one_in(
    client, owner, bank, monkeypatch, celery_worker
):
    monkeypatch.setattr(item_tables, "KEPT_MIN_RETRIEVALS", 1)
    trajectories = history(bank, seed=16)
    assert item_tables.item_table_compute(bank_id=bank.pk, since=None, limit=item_tables.PAGE_ITEMS)
    key = kept_key(bank)
    kept = cache.get(key)
    cache.set(key, kept | {"at": kept["at"] - timedelta(minutes=10)}, item_tables.KEPT_SECONDS)  # computed long ago
    flip_an_old_verdict(trajectories)  # and changed since: outdated, in the worker's eyes too
    old = [public_id for public_id, *_ in shown(kept["outcomes"])]
    client.force_login(owner)
    opened = page(client, bank, "all")
    assert (
        opened.context["items_poll"].recomputing and b"data-kept-recomputing" in opened.content
    )  # queued, shown, polled
    assert rows(opened.content.decode()) == old
    url = f"/banks/{bank.public_id}/impact/items/?days=all&started={int(time.time())}"

    def polled():
        response = client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        if "data-kept-recomputing" in html:  # still the old table, which polls again
            assert rows(html) == old and "data-items-as-of" in html
            return False
        return html

    swapped = wait_for(polled, timeout=60, what="the worker to store the recomputed per-item table")
    new = [public_id for public_id, *_ in afresh(bank, None)[0]]
    assert rows(swapped) == new and "hx-trigger" not in swapped and "data-items-as-of" not in swapped
    assert shown(page(client, bank, "all").context["items"]) == afresh(bank, None)[0] != shown(kept["outcomes"])
