"""Retrieval benchmark: latency of POST /api/v1/retrieve through the real HTTP
stack, the in-process floor (query embedding + SQL search), and HNSW
recall@10 against exact search, at several bank sizes; then the same with a
selective filter (1% of the bank tagged "rare"): each filtered search must
still serve k items (the filter runs inside the iterative index scan).

    python bench/retrieval.py [--sizes 1000,10000,100000] [--queries 50]

Uses its own database (``rb_bench``) on the embedded server (RB_DATA_DIR), or
the server of DATABASE_URL; the data is rebuilt at each size. The target bank
holds N approved items; four other banks hold N/4 more between them, drawn
from the same clusters, so the bank filter matters. Vectors are random unit
vectors perturbed around a few hundred cluster centres (intra-cluster cosine
≈ 0.9), which makes nearest-neighbour search non-trivial.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import urllib.request
import uuid

import numpy as np
from common import pct as _pct
from common import setup_django, start_server, stop_server

DIM = 384
CLUSTERS = 300
NOISE = 0.5  # norm of the perturbation; cos(item, centre) ≈ 1/sqrt(1+NOISE²)
OTHER_BANKS = 4
RARE_EVERY = 100  # one target item in RARE_EVERY is tagged "rare" (the selective filter)
QUERY_TEXTS = [
    "Sign in to the store and list my orders from last month",
    "Find the cheapest flight to Lisbon next Friday",
    "Change the shipping address on my most recent order",
    "Open the repository settings and add a deploy key",
    "Fill in the contact form with my phone number",
    "Export the quarterly report as CSV",
    "Search the forum for posts about database migrations",
    "Book a table for two on Saturday evening",
    "Reset my password from the login page",
    "Compare the ratings of the two most popular laptops",
]


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def _clustered(rng, centres: np.ndarray, n: int) -> np.ndarray:
    picks = rng.integers(0, len(centres), size=n)
    noise = rng.normal(size=(n, DIM)).astype(np.float32) * (NOISE / np.sqrt(DIM))
    return _unit(centres[picks] + noise)


def _reused(n: int, kind: str) -> dict | None:
    """The bench data a previous run left (same ``kind`` of vectors, same
    size, the HNSW index in place) with a fresh token, or None."""
    from django.db import connection

    from accounts.models import Bank
    from accounts.tokens.services import api_token_create
    from memories.items.models import MemoryItem

    bank = Bank.objects.filter(slug="target", team__slug__startswith=f"bench-{kind}-{n}-").first()
    with connection.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'memoryitem_embedding_hnsw'")
        indexed = cur.fetchone() is not None
    if bank is None or not indexed or bank.items.filter(status="approved").count() != n:
        return None
    secret = api_token_create(bank=bank, name="bench", scopes=["retrieve"]).secret
    return {
        "bank": bank,
        "secret": secret,
        "rows": MemoryItem.objects.filter(bank__team=bank.team).count(),
        "load_s": 0.0,
        "index_s": 0.0,
        "reused": True,
    }


def _reset_and_load(n: int, rng, centres, *, kind: str = "random", reuse: bool = False) -> dict:
    """Empty the bench tables, create the banks and token, COPY the items,
    build the HNSW index. Returns the target bank, token secret and timings.
    With ``reuse``, keeps what a previous run of the same ``kind`` and size
    loaded (building 100k items takes a minute)."""
    from django.db import connection
    from pgvector.psycopg import register_vector

    from accounts.models import Bank
    from accounts.tokens.services import api_token_create
    from memories.embedding.model import embedding_hash, embedding_model_name, item_embedding_text
    from tests import factories

    if reuse and (data := _reused(n, kind)):
        return data
    with connection.cursor() as cur:
        cur.execute("TRUNCATE accounts_team, memories_memoryitem, memories_experience CASCADE")
        cur.execute("DROP INDEX IF EXISTS memoryitem_embedding_hnsw")
    team = factories.make_team(slug=f"bench-{kind}-{n}-{uuid.uuid4().hex[:6]}")
    target = factories.make_bank(team=team, slug="target", rate_limit_per_minute=0, min_similarity=-1.0)
    others = [factories.make_bank(team=team, slug=f"other-{i}") for i in range(OTHER_BANKS)]
    secret = api_token_create(bank=target, name="bench", scopes=["retrieve"]).secret

    per_other = max(1, n // (4 * OTHER_BANKS))
    plan = [(target.pk, n)] + [(b.pk, per_other) for b in others]
    model = embedding_model_name()
    started = time.perf_counter()
    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    columns = (
        "public_id",
        "bank_id",
        "title",
        "description",
        "content",
        "status",
        "origin",
        "source_task_id",
        "cited_steps",
        "model",
        "prompt_version",
        "verdict_label",
        "near_duplicates",
        "needs_review_reason",
        "status_reason",
        "embedding",
        "embedding_hash",
        "embedding_model",
        "served_count",
        "created_at",
        "updated_at",
        "approved_at",
        "tags",
        "source_agents",
        "source_metadata",
    )
    types = [
        "uuid",
        "int8",
        "text",
        "text",
        "text",
        "text",
        "text",
        "text",
        "jsonb",
        "text",
        "text",
        "text",
        "jsonb",
        "text",
        "text",
        "vector",
        "text",
        "text",
        "int4",
        "timestamptz",
        "timestamptz",
        "timestamptz",
        "varchar[]",
        "varchar[]",
        "jsonb",
    ]
    description = "Use when a synthetic benchmark task looks like this one."
    content = "A synthetic lesson used to measure retrieval latency and recall."
    from django.utils import timezone

    now = timezone.now()
    copy_sql = f"COPY memories_memoryitem ({', '.join(columns)}) FROM STDIN WITH (FORMAT BINARY)"
    with raw.cursor() as cur, cur.copy(copy_sql) as copy:
        copy.set_types(types)
        for bank_id, count in plan:
            vectors = _clustered(rng, centres, count)
            for i in range(count):
                title = f"Bench lesson {bank_id}-{i}"
                digest = embedding_hash(
                    item_embedding_text(title=title, description=description, content=content), model
                )
                copy.write_row(
                    (
                        uuid.uuid4(),
                        bank_id,
                        title,
                        description,
                        content,
                        "approved",
                        "import",
                        "",
                        [],
                        "",
                        "",
                        "",
                        [],
                        "",
                        "",
                        vectors[i],
                        digest,
                        model,
                        0,
                        now,
                        now,
                        now,
                        ["rare"] if bank_id == target.pk and i % RARE_EVERY == 0 else [],
                        [],
                        [],
                    )
                )
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute("SET maintenance_work_mem = '1GB'")
        cur.execute("SET max_parallel_maintenance_workers = 1")
        cur.execute(
            "CREATE INDEX memoryitem_embedding_hnsw ON memories_memoryitem "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 32, ef_construction = 128)"
        )
        cur.execute("ANALYZE memories_memoryitem")
    index_s = time.perf_counter() - started
    return {
        "bank": Bank.objects.get(pk=target.pk),
        "secret": secret,
        "rows": sum(c for _, c in plan),
        "load_s": load_s,
        "index_s": index_s,
    }


def _exact_search(bank, vector, k, **filters):
    from django.db import connection, transaction
    from pgvector.django import CosineDistance

    from memories.items.models import MemoryItem

    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SET LOCAL enable_indexscan = off")
        rows = list(
            MemoryItem.objects.filter(bank=bank, status="approved", embedding__isnull=False, **filters)
            .annotate(distance=CosineDistance("embedding", vector))
            .values_list("pk", flat=True)
            .order_by("distance")[:k]
        )
    return rows


def _plan_uses_hnsw(bank, vector, where: str = "") -> bool:
    from django.db import connection, transaction

    from memories.serving.search import HNSW_EF_SEARCH, hnsw_iterative_scan

    with transaction.atomic():
        hnsw_iterative_scan(ef_search=HNSW_EF_SEARCH)
        with connection.cursor() as cur:
            cur.execute(
                "EXPLAIN SELECT id FROM memories_memoryitem WHERE bank_id = %s AND status = 'approved' "
                f"{where} ORDER BY embedding <=> %s::vector LIMIT 10",
                [bank.pk, "[" + ",".join(f"{x:.6f}" for x in vector) + "]"],
            )
            return "hnsw" in "\n".join(r[0] for r in cur.fetchall())


def retrieve_timed(base, secret, query, filters=None) -> tuple[float, dict]:
    """One ``POST /api/v1/retrieve`` (k = 10): its time in ms and its answer, asserted to serve k items."""
    import json

    body = {"query": query, "k": 10, **({"filters": filters} if filters else {})}
    request = urllib.request.Request(
        f"{base}/api/v1/retrieve",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        method="POST",
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        raw = response.read()
        assert response.status == 200, raw
    elapsed = (time.perf_counter() - started) * 1000
    answer = json.loads(raw)
    assert len(answer["items"]) == 10, answer  # the real work: k items served
    return elapsed, answer


def _post(base, secret, query, filters=None) -> float:
    return retrieve_timed(base, secret, query, filters)[0]


def run(sizes: list[int], queries: int, port: int | None = None) -> list[dict]:
    setup_django()
    from memories.embedding.model import embed_text
    from memories.serving import RetrievalFilters
    from memories.serving.search import approved_items_search

    rng = np.random.default_rng(42)
    centres = _unit(rng.normal(size=(CLUSTERS, DIM)).astype(np.float32))
    embed_text("warm up")
    proc, base = start_server(port=port)
    rows = []
    try:
        for n in sizes:
            data = _reset_and_load(n, rng, centres)
            bank, secret = data["bank"], data["secret"]
            query_vectors = _clustered(rng, centres, queries)
            texts = [QUERY_TEXTS[i % len(QUERY_TEXTS)] + f" (#{i})" for i in range(queries)]

            for text in texts[:5]:  # warm the server's model and caches
                _post(base, secret, text)
            http = [_post(base, secret, text) for text in texts]
            rare = {"tags": {"any": ["rare"]}}
            http_rare = [_post(base, secret, text, rare) for text in texts]
            only_rare = RetrievalFilters(tags_any=("rare",))

            embed_ms, search_ms, exact_ms, recalls, rare_ms, rare_recalls = [], [], [], [], [], []
            for text, vector in zip(texts, query_vectors):
                t0 = time.perf_counter()
                embed_text(text)
                embed_ms.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                approx = approved_items_search(bank=bank, vector=vector, k=10, min_similarity=-1.0)
                search_ms.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                exact = _exact_search(bank, vector, 10)
                exact_ms.append((time.perf_counter() - t0) * 1000)
                recalls.append(len({item.pk for item, _ in approx} & set(exact)) / max(1, len(exact)))
                t0 = time.perf_counter()
                approx = approved_items_search(bank=bank, vector=vector, k=10, min_similarity=-1.0, filters=only_rare)
                rare_ms.append((time.perf_counter() - t0) * 1000)
                assert len(approx) == 10 and all("rare" in item.tags for item, _ in approx), "filtered search starved"
                exact = _exact_search(bank, vector, 10, tags__overlap=["rare"])
                rare_recalls.append(len({item.pk for item, _ in approx} & set(exact)) / max(1, len(exact)))
            rows.append(
                {
                    "n": n,
                    "rows": data["rows"],
                    "load_s": data["load_s"],
                    "index_s": data["index_s"],
                    "hnsw": _plan_uses_hnsw(bank, query_vectors[0]),
                    "http_p50": _pct(http, 50),
                    "http_p95": _pct(http, 95),
                    "embed_p50": _pct(embed_ms, 50),
                    "search_p50": _pct(search_ms, 50),
                    "search_p95": _pct(search_ms, 95),
                    "exact_p50": _pct(exact_ms, 50),
                    "recall": statistics.mean(recalls),
                    "rare_hnsw": _plan_uses_hnsw(bank, query_vectors[0], "AND tags && ARRAY['rare']::varchar[]"),
                    "rare_http_p50": _pct(http_rare, 50),
                    "rare_search_p50": _pct(rare_ms, 50),
                    "rare_search_p95": _pct(rare_ms, 95),
                    "rare_recall": statistics.mean(rare_recalls),
                }
            )
            print(_table(rows[-1:]), flush=True)
    finally:
        stop_server(proc)
    return rows


def _table(rows: list[dict]) -> str:
    head = (
        "| items in bank | rows in table | load s | HNSW build s | plan | HTTP p50 ms | HTTP p95 ms "
        "| embed p50 ms | search p50 ms | search p95 ms | exact p50 ms | recall@10 "
        "| 1% filter: plan | HTTP p50 ms | search p50 ms | search p95 ms | recall@10 |"
    )
    lines = [head, "|" + "|".join("---" for _ in range(17)) + "|"]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['rows']:,} | {r['load_s']:.1f} | {r['index_s']:.1f} | {'hnsw' if r['hnsw'] else 'exact'} "
            f"| {r['http_p50']:.1f} | {r['http_p95']:.1f} | {r['embed_p50']:.1f} | {r['search_p50']:.1f} "
            f"| {r['search_p95']:.1f} | {r['exact_p50']:.1f} | {r['recall']:.3f} "
            f"| {'hnsw' if r['rare_hnsw'] else 'exact'} | {r['rare_http_p50']:.1f} | {r['rare_search_p50']:.1f} | {r['rare_search_p95']:.1f} | {r['rare_recall']:.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated item counts of the target bank")
    parser.add_argument("--queries", type=int, default=50, help="queries per size (HTTP and in-process)")
    parser.add_argument("--port", type=int, default=None, help="the web server's loopback port (default: a free one)")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    started = time.perf_counter()
    rows = run(sizes, args.queries, port=args.port)
    print(
        f"\n## Retrieval benchmark ({args.queries} queries per size, k=10, {os.cpu_count()} CPUs, "
        f"{time.perf_counter() - started:.0f} s total)\n"
    )
    print(_table(rows))


if __name__ == "__main__":
    main()
