"""Page-render benchmark of the review UI at scale.

Fills a separate database ``rb_bench_pages`` (on the same PostgreSQL server as
the app: the embedded one, or DATABASE_URL's) with one bank holding 100k
trajectories and 100k memory items (bulk inserts, kept between runs), then
renders the heaviest list pages through Django's test client and prints
p50/p95 wall time per page, including the SQL.

    RB_DATA_DIR=/tmp/rb-data-bench .venv/bin/python bench/pages.py [--n 100000] [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("RB_BENCH_DB", "rb_bench_pages")  # kept between runs, apart from the other benches
from common import bench_bank, pct, setup_django


def seed(n: int):
    from django.db import connection

    from memories.items.models import MemoryItem
    from trajectories.models import Trajectory

    user, bank = bench_bank()
    steps = [
        {"index": 0, "kind": "user", "content": "Find the cheapest flight."},
        {"index": 1, "kind": "tool_call", "content": "", "name": "search", "arguments": '{"q": "flights"}'},
        {"index": 2, "kind": "tool_result", "content": "3 results " + "x" * 400},
        {"index": 3, "kind": "answer", "content": "Flight X."},
    ]
    statuses = ["done"] * 6 + ["awaiting_llm", "needs_attention", "judged", "distilling"]
    agents = [f"agent-{i}" for i in range(8)]
    batch = 5000
    have = Trajectory.objects.filter(bank=bank).count()
    t0 = time.perf_counter()
    while have < n:
        size = min(batch, n - have)
        Trajectory.objects.bulk_create(
            Trajectory(
                bank=bank,
                task=f"Task {i}: book the cheapest trip number {i} across town",
                steps=steps,
                step_count=4,
                final_answer=f"answer {i}",
                agent=agents[i % 8],
                status=statuses[i % 10],
                verdict=("success", "failure", "")[i % 3],
            )
            for i in range(have, have + size)
        )
        have += size
    item_status = ["approved"] * 5 + ["proposed"] * 3 + ["rejected", "superseded"]
    origins = ["success", "failure", "matts-parallel", "manual"]
    have_items = MemoryItem.objects.filter(bank=bank).count()
    while have_items < n:
        size = min(batch, n - have_items)
        MemoryItem.objects.bulk_create(
            MemoryItem(
                bank=bank,
                title=f"Lesson {i}: verify the price before booking",
                description=f"Use when booking trip {i % 97}.",
                content="Compare at least two sources and re-check the total with taxes before answering.",
                status=item_status[i % 10],
                origin=origins[i % 4],
                verdict_label=("success", "failure")[i % 2],
                near_duplicates=[{"id": "00000000-0000-0000-0000-000000000000", "similarity": 0.9}]
                if i % 7 == 0
                else [],
            )
            for i in range(have_items, have_items + size)
        )
        have_items += size
    if time.perf_counter() - t0 > 1:
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
        print(f"seeded in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return user, bank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="trajectories and items each")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    setup_django()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    user, bank = seed(args.n)
    client = Client()
    client.force_login(user)
    b = bank.public_id
    pages = [
        ("review queue", f"/banks/{b}/review/"),
        ("review queue, page 200", f"/banks/{b}/review/?page=200"),
        ("review queue, search", f"/banks/{b}/review/?q=trip+1234"),
        ("review queue, agent filter", f"/banks/{b}/review/?agent=agent-3"),
        ("items, all", f"/banks/{b}/items/"),
        ("items, approved", f"/banks/{b}/items/?status=approved"),
        ("trajectories", f"/banks/{b}/trajectories/"),
        ("trajectories, status+verdict", f"/banks/{b}/trajectories/?status=done&verdict=failure"),
        ("trajectories, search", f"/banks/{b}/trajectories/?q=number+4242"),
        ("dashboard", f"/banks/{b}/"),
    ]
    # Search pages must find something (the real work): a proposed item and a trajectory that match.
    must_show = (
        {"review queue, search": "Lesson 12345:", "trajectories, search": "Task 4242:"} if args.n > 12345 else {}
    )
    print(f"{args.n:,} trajectories and {args.n:,} items in one bank; {args.runs} renders per page\n")
    print("| page | p50 ms | p95 ms | queries |\n|---|---:|---:|---:|")
    for label, url in pages:
        response = client.get(url)  # warm
        assert response.status_code == 200, (url, response.status_code)
        assert must_show.get(label, "") in response.content.decode(), (url, "no match shown")
        times = []
        for _ in range(args.runs):
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                client.get(url)
                times.append((time.perf_counter() - start) * 1000)
        times.sort()
        p95 = pct(times, 95)
        print(f"| {label} | {statistics.median(times):.1f} | {p95:.1f} | {len(queries)} |")


if __name__ == "__main__":
    main()
