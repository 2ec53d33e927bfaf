"""Dataset export benchmark: how fast the Export page's files stream, and
that they stream (memory stays flat however many rows).

Fills a separate database ``rb_bench_exports`` with one bank holding N judged
trajectories (6-step runs with a tool call; every one judged by the LLM, every
fifth also by a human) and N/10 approved items (bulk inserts, kept between
runs), then downloads each export through Django's test client (session
auth, the real views, the real streaming response) and prints rows, MB,
seconds, rows/s, SQL queries and the Python heap's peak while streaming.
Every line is parsed back and the row count checked, so each run did the work.

    RB_DATA_DIR=/tmp/rb-data-bench .venv/bin/python bench/exports.py [--n 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tracemalloc

os.environ.setdefault("RB_BENCH_DB", "rb_bench_exports")  # kept between runs, apart from the other benches
from common import bench_bank, setup_django

STEPS = [
    {"index": 0, "kind": "user", "content": "Find the cheapest flight to Lisbon next Friday."},
    {"index": 1, "kind": "thought", "content": "Search the flight site first."},
    {
        "index": 2,
        "kind": "tool_call",
        "content": "",
        "name": "search",
        "arguments": '{"q": "flights"}',
        "call_id": "c1",
    },
    {"index": 3, "kind": "tool_result", "content": "3 results " + "x" * 400, "call_id": "c1"},
    {"index": 4, "kind": "thought", "content": "The second one is cheapest."},
    {"index": 5, "kind": "answer", "content": "Flight TP123 at 89 EUR."},
]


def seed(n: int):
    from django.db import connection

    from memories.items.models import MemoryItem
    from trajectories.models import Judgment, Trajectory

    user, bank = bench_bank()
    t0 = time.perf_counter()
    have = Trajectory.objects.filter(bank=bank).count()
    while have < n:
        size = min(5000, n - have)
        rows = Trajectory.objects.bulk_create(
            Trajectory(
                bank=bank,
                task=f"Task {i}: book the cheapest flight number {i}",
                steps=STEPS,
                step_count=len(STEPS),
                final_answer="Flight TP123 at 89 EUR.",
                agent=f"agent-{i % 8}",
                status="done",
                verdict=("success", "failure")[i % 2],
            )
            for i in range(have, have + size)
        )
        judgments = []
        for i, t in enumerate(rows, start=have):
            label = ("success", "failure")[i % 2]
            judgments.append(Judgment(trajectory=t, source="llm", label=label, prompt_version="judge/v1", model="m"))
            if i % 5 == 0:
                judgments.append(Judgment(trajectory=t, source="human", label=label, rationale="checked", author=user))
        Judgment.objects.bulk_create(judgments)
        have += size
    items = MemoryItem.objects.filter(bank=bank).count()
    if items < n // 10:
        MemoryItem.objects.bulk_create(
            MemoryItem(
                bank=bank,
                title=f"Lesson {i}: compare two sources",
                description="Use when prices differ.",
                content="Check the total with taxes on two sites before answering.",
                status="approved",
                origin=("success", "failure", "manual")[i % 3],
            )
            for i in range(items, n // 10)
        )
    if time.perf_counter() - t0 > 1:
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
        print(f"seeded in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return user, bank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20_000, help="trajectories (items: n/10)")
    args = parser.parse_args()

    setup_django()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    user, bank = seed(args.n)
    client = Client()
    client.force_login(user)
    kw = {"bank_id": bank.public_id}
    exports = [
        ("chat JSONL, successes", reverse("trajectories:export_chat", kwargs=kw) + "?verdict=success", args.n // 2),
        ("chat JSONL, all", reverse("trajectories:export_chat", kwargs=kw) + "?verdict=all", args.n),
        ("judge eval set (with judge_input)", reverse("trajectories:export_judge_eval", kwargs=kw), (args.n + 4) // 5),
        ("reasoning-bank memories", reverse("trajectories:export_reasoning_bank", kwargs=kw), args.n // 10),
    ]
    print(f"{args.n:,} judged trajectories, {args.n // 10:,} approved items in one bank\n")
    print("| export | rows | MB | s | rows/s | queries | heap peak MB |\n|---|---:|---:|---:|---:|---:|---:|")
    for label, url, expected in exports:
        tracemalloc.start()
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            rows, size = 0, 0
            for chunk in response.streaming_content:
                size += len(chunk)
                for line in chunk.decode().splitlines():
                    json.loads(line)  # every line is one JSON object: the real work, checked
                    rows += 1
            seconds = time.perf_counter() - start
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert rows == expected, (label, rows, expected)
        print(
            f"| {label} | {rows:,} | {size / 1e6:.1f} | {seconds:.2f} | {rows / seconds:,.0f} | {len(queries)} | {peak / 1e6:.1f} |"
        )


if __name__ == "__main__":
    main()
