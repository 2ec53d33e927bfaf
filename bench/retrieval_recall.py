"""HNSW recall@10 against its cost: the production search (relaxed-order
iterative scan) at several ``hnsw.ef_search`` values, unfiltered and with a
tag filter matching 1% of the bank, against the exact search (index scans
off), on the data of bench/compare_reasoning_bank.py (item vectors clustered
around real MiniLM embeddings of 80 task texts, real-text queries) — the
hard case: 100k items in 80 tight clusters.

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/retrieval_recall.py [--size 100000] [--queries 50]
        [--ef 40,64,100,200,400] [--fresh] [--m 16 --ef-construction 64]

Reuses the bench database a previous run (or compare_reasoning_bank.py) left
at the same size unless ``--fresh``. ``--m`` / ``--ef-construction`` rebuild
the HNSW index with those parameters first (the migration's: m=32,
ef_construction=128), printing the build time. Prints one line per setting:
``filter=<none|1%> ef_search=<n> recall_at_10=<r> search_p50_ms=<x> search_p95_ms=<y>`` and marks
the production values (memories.serving.search.HNSW_EF_SEARCH / HNSW_EF_SEARCH_FILTERED).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_note, pct, setup_django
from compare_reasoning_bank import CENTRE_TEXTS
from retrieval import QUERY_TEXTS, _exact_search, _reset_and_load

K = 10


def _rebuild_index(m: int, ef_construction: int) -> float:
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute("DROP INDEX IF EXISTS memoryitem_embedding_hnsw")
        cur.execute("SET maintenance_work_mem = '1GB'")
        cur.execute("SET max_parallel_maintenance_workers = 1")
        cur.execute(
            "CREATE INDEX memoryitem_embedding_hnsw ON memories_memoryitem "
            f"USING hnsw (embedding vector_cosine_ops) WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
        )
    return time.perf_counter() - started


def _index_definition() -> str:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memoryitem_embedding_hnsw'")
        return cur.fetchone()[0]


def run(size: int, queries: int, efs: list[int], fresh: bool, index: tuple[int, int] | None = None) -> list[dict]:
    setup_django()
    from memories.embedding.model import embed_texts
    from memories.serving import NO_FILTERS, RetrievalFilters
    from memories.serving.search import HNSW_EF_SEARCH, HNSW_EF_SEARCH_FILTERED, approved_items_search

    rng = np.random.default_rng(7)
    data = _reset_and_load(size, rng, embed_texts(CENTRE_TEXTS), kind="text", reuse=not fresh)
    bank = data["bank"]
    if index:
        print(f"# HNSW index rebuilt with m={index[0]}, ef_construction={index[1]} in {_rebuild_index(*index):.0f} s")
    print(f"# {_index_definition()}", flush=True)
    texts = [QUERY_TEXTS[i % len(QUERY_TEXTS)] + f" (#{i})" for i in range(queries)]
    vectors = embed_texts(texts)
    rare = RetrievalFilters(tags_any=("rare",))
    rows = []
    for label, filters, exact_filters, production in (
        ("none", NO_FILTERS, {}, HNSW_EF_SEARCH),
        ("1%", rare, {"tags__overlap": ["rare"]}, HNSW_EF_SEARCH_FILTERED),
    ):
        exact = [set(_exact_search(bank, vector, K, **exact_filters)) for vector in vectors]
        for ef in sorted({*efs, production}):
            ms, recalls = [], []
            for vector, truth in zip(vectors, exact):
                started = time.perf_counter()
                found = approved_items_search(
                    bank=bank, vector=vector, k=K, min_similarity=-1.0, filters=filters, ef_search=ef
                )
                ms.append((time.perf_counter() - started) * 1000)
                assert len(found) == K, f"the search served {len(found)} items"  # the real work
                recalls.append(len({item.pk for item, _ in found} & truth) / K)
            rows.append(
                {
                    "filter": label,
                    "ef": ef,
                    "recall": statistics.mean(recalls),
                    "p50": pct(ms, 50),
                    "p95": pct(ms, 95),
                    "production": ef == production,
                }
            )
            print(_line(rows[-1]), f"# {load_note()}", flush=True)
    return rows


def _line(r: dict) -> str:
    return (
        f"filter={r['filter']} ef_search={r['ef']} recall_at_10={r['recall']:.3f} "
        f"search_p50_ms={r['p50']:.1f} search_p95_ms={r['p95']:.1f}" + (" production" if r["production"] else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="items in the searched bank")
    parser.add_argument("--queries", type=int, default=50, help="real-text queries")
    parser.add_argument("--ef", default="40,64,100,200,400", help="comma-separated hnsw.ef_search values")
    parser.add_argument("--fresh", action="store_true", help="reload the items even if a previous run left them")
    parser.add_argument("--m", type=int, default=None, help="rebuild the HNSW index with this m")
    parser.add_argument("--ef-construction", type=int, default=64, help="… and this ef_construction")
    args = parser.parse_args()
    efs = [int(x) for x in args.ef.split(",") if x.strip()]
    started = time.perf_counter()
    index = (args.m, args.ef_construction) if args.m else None
    rows = run(args.size, args.queries, efs, args.fresh, index)
    print(
        f"\n## HNSW recall@10 vs cost, {args.size:,} items, {args.queries} queries ({time.perf_counter() - started:.0f} s)"
    )
    for r in rows:
        print(_line(r))


if __name__ == "__main__":
    main()
