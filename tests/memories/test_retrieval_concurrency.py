"""Concurrent retrievals that serve the same items must never fail.

A fleet of agents shares one bank: 16 clients retrieve at once over real HTTP
from a live server (one thread and one database connection per request), all
serving the same approved items in different orders. Served counters bumped
by a multi-row UPDATE inside each request would lock the same rows in
different orders and deadlock two requests (a 500)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from memories.items.models import MemoryItem
from memories.serving.models import RetrievalEvent
from memories.serving.upkeep import memory_items_count_served
from tests import factories
from tests.helpers import post_over_http, wait_for

CLIENTS = 16
ROUNDS = 12


@pytest.mark.django_db(transaction=True)
def test_sixteen_concurrent_clients_sharing_items_all_get_their_lessons(live_server, approved):
    bank = factories.make_bank(top_k=4, min_similarity=-1.0, rate_limit_per_minute=0)
    items = [approved(bank, *texts) for texts in factories.FLEET_LESSONS]
    token = factories.make_token(bank)
    url = f"{live_server.url}/api/v1/retrieve"
    jobs = [
        factories.FLEET_QUERIES[(c + r) % len(factories.FLEET_QUERIES)] for c in range(CLIENTS) for r in range(ROUNDS)
    ]

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        answers = list(pool.map(lambda q: post_over_http(url, token, {"query": q, "k": 4}), jobs))

    failures = [(status, body.get("detail")) for status, body in answers if status != 200]
    assert failures == [], f"{len(failures)} of {len(jobs)} retrievals failed, e.g. {failures[:3]}"
    assert all(len(body["items"]) == 4 for _status, body in answers), "every client is served all four lessons"
    # Each log is written just after its answer, off the agent's wait: every one lands.
    wait_for(
        lambda: RetrievalEvent.objects.filter(bank=bank).count() >= len(jobs),
        timeout=30,
        interval=0.02,
        what="every retrieval's log",
    )
    assert RetrievalEvent.objects.filter(bank=bank).count() == len(jobs)

    # The counters are folded from the events outside the request, exactly once.
    assert memory_items_count_served() == len(jobs)
    assert memory_items_count_served() == 0
    counts = dict(MemoryItem.objects.filter(pk__in=[i.pk for i in items]).values_list("pk", "served_count"))
    assert counts == {item.pk: len(jobs) for item in items}
