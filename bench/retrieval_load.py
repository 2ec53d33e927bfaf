"""Load benchmark: many agents retrieving from ONE bank at once.

    python bench/retrieval_load.py [--clients 16] [--requests 40] [--port N]

A bank with a handful of approved items (embedded by the real model) that
every query serves in some order — the case where concurrent retrievals touch
the same rows (served counters bumped inside each request would deadlock
them). ``--clients`` threads send ``--requests`` each to gunicorn
(2 workers × 8 threads) on loopback. Asserts that every answer is a 200
serving k items, then folds the served counters and checks they add up.
Prints requests/s, latency percentiles and errors."""

from __future__ import annotations

import argparse
import json
import os
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

from common import pct, setup_django, start_server, stop_server

K = 4


def _seed():
    from django.contrib.auth import get_user_model

    from memories.items.services import memory_item_create
    from tests import factories

    user = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:8]}")
    team = factories.make_team(owner=user, slug=f"load-{uuid.uuid4().hex[:6]}")
    bank = factories.make_bank(team=team, slug="shared", top_k=K, min_similarity=-1.0, rate_limit_per_minute=0)
    items = []
    for title, description, content in factories.FLEET_LESSONS:
        # Approved at creation: embedded inline (an approval only enqueues the embedding).
        items.append(
            memory_item_create(
                bank=bank, title=title, description=description, content=content, author=user, status="approved"
            )
        )
    return bank, items, factories.make_token(bank)


def _post(base: str, token: str, query: str) -> tuple[int, int, float]:
    request = urllib.request.Request(
        f"{base}/api/v1/retrieve",
        data=json.dumps({"query": query, "k": K}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            served = len(json.loads(response.read())["items"])
            status = response.status
    except urllib.error.HTTPError as exc:
        status, served = exc.code, 0
    return status, served, (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=40, help="requests per client")
    parser.add_argument("--port", type=int, default=None)
    args = parser.parse_args()

    setup_django()
    from memories.items.models import MemoryItem
    from memories.serving.upkeep import memory_items_count_served
    from tests.factories import FLEET_QUERIES as QUERIES

    _bank, items, token = _seed()
    memory_items_count_served()  # start from folded counters
    proc, base = start_server(port=args.port, workers=2, threads=8)
    try:
        for query in QUERIES:  # warm both workers' models
            _post(base, token, query)
            _post(base, token, query)
        jobs = [QUERIES[i % len(QUERIES)] for i in range(args.clients * args.requests)]
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.clients) as pool:
            answers = list(pool.map(lambda q: _post(base, token, q), jobs))
        wall = time.perf_counter() - started
    finally:
        stop_server(proc)

    errors = [status for status, _served, _ms in answers if status != 200]
    short = [served for status, served, _ms in answers if status == 200 and served != K]
    latencies = [ms for _status, _served, ms in answers]
    folded = memory_items_count_served()
    counts = list(MemoryItem.objects.filter(pk__in=[i.pk for i in items]).values_list("served_count", flat=True))
    print(
        f"clients={args.clients} requests={len(jobs)} served_per_answer={K} rps={len(jobs) / wall:.1f} "
        f"p50_ms={pct(latencies, 50):.1f} p95_ms={pct(latencies, 95):.1f} errors={len(errors)} "
        f"cpus={os.cpu_count()} load1={os.getloadavg()[0]:.2f}"
    )
    assert not errors, f"{len(errors)} requests failed: statuses {sorted(set(errors))}"
    assert not short, f"{len(short)} answers served fewer than {K} items"
    warmup = 2 * len(QUERIES)
    assert folded == len(jobs) + warmup, f"folded {folded} retrievals, expected {len(jobs) + warmup}"
    assert all(c == len(jobs) + warmup for c in counts), counts


if __name__ == "__main__":
    main()
