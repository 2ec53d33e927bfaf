"""What serving one item per lesson costs: the retrieval search
(``approved_items_search_counted``, one query) without and with the bank's
duplicate threshold, which fetches 2·k candidates with their mutual cosine
similarities (computed by PostgreSQL in the same query) and drops the
near-duplicates of better ones in Python. Both variants run interleaved,
query by query, in alternating order, so the machine's load weighs on both.

    python bench/retrieval_dedup.py [--size 10000] [--queries 200] [--threshold 0.92]

Same data as bench/retrieval.py (its loader: the target bank's N approved
items in clusters). Asserts each search did the real work: one SQL query, k
items served without dedup, and no two served items at or above the
threshold with it; counts the answers dedup changed, and those left with
fewer than k items (the 2·k nearest held fewer than k distinct lessons).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from common import pct, setup_django
from retrieval import CLUSTERS, DIM, _clustered, _reset_and_load, _unit


def run(size: int, queries: int, threshold: float) -> list[dict]:
    setup_django()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memories.items.models import MemoryItem
    from memories.serving.search import approved_items_search_counted

    rng = np.random.default_rng(42)
    centres = _unit(rng.normal(size=(CLUSTERS, DIM)).astype(np.float32))
    bank = _reset_and_load(size, rng, centres, reuse=True)["bank"]
    vectors = _clustered(rng, centres, queries)
    rows = []
    for k in (3, 10):
        variants = {"off": None, f"≥ {threshold}": threshold}
        times: dict[str, list[float]] = {label: [] for label in variants}
        dropped = short = 0
        for vector in vectors[:10]:  # warm
            approved_items_search_counted(bank=bank, vector=vector, k=k, min_similarity=-1.0)
        for n, vector in enumerate(vectors):
            answers = {}
            # Interleaved, in alternating order, so the machine's load weighs on both alike.
            for label in list(variants)[:: 1 if n % 2 else -1]:
                with CaptureQueriesContext(connection) as captured:
                    t0 = time.perf_counter()
                    answers[label], _counts = approved_items_search_counted(
                        bank=bank, vector=vector, k=k, min_similarity=-1.0, duplicate_threshold=variants[label]
                    )
                    times[label].append((time.perf_counter() - t0) * 1000)
                assert len(captured) == 1, [q["sql"][:80] for q in captured.captured_queries]
            plain, pairs = answers["off"], answers[f"≥ {threshold}"]
            assert len(plain) == k, (len(plain), k)
            short += len(pairs) < k  # the 2·k nearest held fewer than k distinct lessons
            served = np.stack(
                [
                    np.asarray(v, dtype=np.float32)
                    for v in MemoryItem.objects.filter(pk__in=[i.pk for i, _ in pairs]).values_list(
                        "embedding", flat=True
                    )
                ]
            )
            sims = served @ served.T
            np.fill_diagonal(sims, -1)
            assert sims.max() < threshold, sims.max()
            dropped += [i.pk for i, _ in plain] != [i.pk for i, _ in pairs]
        for label, dedup in variants.items():
            rows.append(
                {
                    "k": k,
                    "dedup": label,
                    "p50": statistics.median(times[label]),
                    "p95": pct(times[label], 95),
                    "changed": f"{dropped}/{queries}" if dedup is not None else "—",
                    "short": f"{short}/{queries}" if dedup is not None else "—",
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threshold", type=float, default=0.92)
    args = parser.parse_args()
    rows = run(args.size, args.queries, args.threshold)
    print(f"\n## Retrieval search with and without dedup ({args.size:,} items, {args.queries} queries, in-process)\n")
    print("| k | dedup | p50 ms | p95 ms | answers changed | fewer than k |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['k']} | {r['dedup']} | {r['p50']:.2f} | {r['p95']:.2f} | {r['changed']} | {r['short']} |")


if __name__ == "__main__":
    main()
