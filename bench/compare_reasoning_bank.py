"""This service side by side with the ``reasoning-bank`` PyPI library: same
items (the same vectors), same MiniLM model for the query, k=10, the sides
measured interleaved per query, in every order of them in turn (each side
follows each other side as often as the others).

- **us**: ``POST /api/v1/retrieve`` through gunicorn (bench/common.py) set up
  as production runs it (gthread, ``--threads`` 4 = docker/entrypoint.sh's
  WEB_THREADS), over one kept HTTP/1.1 connection as the Python SDK's httpx
  client sends an agent's calls, each answer asserted to serve k items;
- **us_new_connection**: the same server, a new connection for each request
  (urllib, ``Connection: close``): an agent that connects for every call.
  Its p50 and ratio to the floor are on the ``#`` line;
- **floor**: in-process query embedding + the production SQL search
  (``approved_items_search``), the same run;
- **reasoning_bank**: ``ReasoningBank.retrieve`` (its sqlite-vec store, its
  MiniLM embedder on the same local model), driven over a JSON-lines pipe
  (bench/reasoning_bank_server.py) in a venv whose Python can load SQLite
  extensions; its time is measured inside the library process.

Item vectors are clustered around real MiniLM embeddings of task texts (the
loader of bench/retrieval.py), queries are real texts. recall@10 is the
floor's search against the exact search (index scans off); the library's
answers are checked against the same exact top-10 (it scans every row).

    /usr/bin/python3 -m venv /tmp/rb-lib && /tmp/rb-lib/bin/pip install reasoning-bank
    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/compare_reasoning_bank.py \\
        --library-python /tmp/rb-lib/bin/python --sizes 1000,10000 [--queries 48] [--port N] [--threads 4]

Ends with one line per size:
``size=<N> served=<items per answer> us_p50_ms=<x> floor_p50_ms=<y> reasoning_bank_p50_ms=<z> recall_at_10=<r>``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    ROOT,
    KeptConnection,
    floor_search,
    load_note,
    retrievals_logged,
    setup_django,
    start_server,
    stop_server,
    worker_memory_mb,
)
from retrieval import QUERY_TEXTS, _exact_search, _reset_and_load

K = 10
CENTRE_TEXTS = [
    f"{verb} {thing}"
    for verb in ("Find", "Compare", "Update", "Cancel", "Export", "Book", "Open", "Search for")
    for thing in (
        "the cheapest flight to Lisbon",
        "my orders from last month",
        "the shipping address of an order",
        "a deploy key in the repository settings",
        "the quarterly report as CSV",
        "a table for two on Saturday",
        "forum posts about database migrations",
        "the password reset page",
        "laptop ratings on the shop",
        "the museum's opening hours",
    )
]


class Library:
    """The reasoning-bank library in its own process (JSON lines over a pipe)."""

    def __init__(self, python: str):
        self.proc = subprocess.Popen(
            [python, str(ROOT / "bench" / "reasoning_bank_server.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        )

    def call(self, **request) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the reasoning-bank process exited (see its stderr above)")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _post(base: str, secret: str, query: str) -> float:
    request = urllib.request.Request(
        f"{base}/api/v1/retrieve",
        data=json.dumps({"query": query, "k": K}).encode(),
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        method="POST",
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status == 200, body
    assert len(json.loads(body)["items"]) == K, body  # the real work: k items served
    return elapsed


def run(
    sizes: list[int], queries: int, library_python: str, port: int | None, fresh: bool = False, threads: int = 4
) -> list[dict]:
    setup_django()
    from memories.embedding.model import embed_text, embed_texts, model_location
    from memories.items.models import MemoryItem
    from memories.serving.models import RetrievalEvent

    rng = np.random.default_rng(7)
    centres = embed_texts(CENTRE_TEXTS)
    texts = [QUERY_TEXTS[i % len(QUERY_TEXTS)] + f" (#{i})" for i in range(queries)]
    library = Library(library_python)
    proc, base = start_server(port=port, threads=threads)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for n in sizes:
                data = _reset_and_load(n, rng, centres, kind="text", reuse=not fresh)
                bank, secret = data["bank"], data["secret"]
                pks, ids, vectors = [], [], []
                for pk, public_id, vector in MemoryItem.objects.filter(bank=bank).values_list(
                    "pk", "public_id", "embedding"
                ):
                    pks.append(pk)
                    ids.append(str(public_id))
                    vectors.append(vector)
                pk_of = dict(zip(ids, pks))
                Path(tmp, "ids.json").write_text(json.dumps(ids))
                np.save(Path(tmp, "vectors.npy"), np.asarray(vectors, dtype=np.float32))
                started = time.perf_counter()
                loaded = library.call(
                    op="load",
                    db=str(Path(tmp, "bank.db")),
                    ids=str(Path(tmp, "ids.json")),
                    vectors=str(Path(tmp, "vectors.npy")),
                    model=model_location(),
                )
                assert loaded.get("loaded") == n, loaded
                library_load_s = time.perf_counter() - started
                logged_before = RetrievalEvent.objects.filter(bank=bank).count()
                for text in texts[:3]:  # warm them all
                    _post(base, secret, text)
                    library.call(op="retrieve", query=text, k=K)
                    embed_text(text)

                kept = KeptConnection(base)  # after the load: a connection idle that long was closed
                kept.retrieve(secret, texts[0], K)
                last: dict = {}  # the floor's vector and items, the library's answer: for recall, after the timing

                def floor(text: str, bank=bank, last=last) -> float:
                    elapsed, vector, found = floor_search(bank, text, K)
                    last.update(vector=vector, found=found)
                    return elapsed

                def reasoning_bank(text: str, last=last) -> float:
                    answer = library.call(op="retrieve", query=text, k=K)
                    assert len(answer["ids"]) == K, answer
                    last.update(answer=answer)
                    return answer["ms"]  # measured inside the library's process

                sides = {
                    "us": lambda text, kept=kept, secret=secret: kept.retrieve(secret, text, K),
                    "us_new_connection": lambda text, secret=secret: _post(base, secret, text),
                    "floor": floor,
                    "library": reasoning_bank,
                }
                times: dict[str, list[float]] = {name: [] for name in sides}
                # Every order of the sides in turn, so each follows each other side as often as the others:
                # the library's full scan leaves the caches cold, and a plain rotation would put us after it in
                # 2 of 3 rounds, a cold request at our median.
                orders = list(itertools.permutations(sides))
                after: dict[tuple[str, str], list[float]] = {}  # (side, what ran just before it) → ms
                previous = "warm-up"
                answered = []  # per query: its vector, our floor's pks, the library's pks (recall, after the timing)
                for i, text in enumerate(texts):
                    for name in orders[i % len(orders)]:
                        times[name].append(sides[name](text))
                        after.setdefault((name, previous), []).append(times[name][-1])
                        previous = name
                    answered.append(
                        (
                            last["vector"],
                            {item.pk for item, _ in last["found"]},
                            {pk_of[public_id] for public_id in last["answer"]["ids"]},
                        )
                    )
                kept.close()
                p50 = {name: statistics.median(values) for name, values in times.items()}
                recalls, lib_recalls = [], []
                # The exact searches (a scan of every row) run after the timed rounds: one between them would
                # leave the next request's caches cold.
                for vector, ours, theirs in answered:
                    exact = set(_exact_search(bank, vector, K))
                    recalls.append(len(ours & exact) / K)
                    lib_recalls.append(len(theirs & exact) / K)
                retrievals_logged(bank, logged_before, 3 + 1 + 2 * len(texts))  # every answer logged
                rows.append(
                    {
                        "size": n,
                        "served": K,
                        "us": p50["us"],
                        "floor": p50["floor"],
                        "new_connection": p50["us_new_connection"],
                        "reopened": kept.reopened,
                        "lib": p50["library"],
                        "recall": statistics.mean(recalls),
                        "lib_recall": statistics.mean(lib_recalls),
                        "load_s": data["load_s"],
                        "lib_load_s": library_load_s,
                    }
                )
                r = rows[-1]
                print(
                    f"# size={n}: p50 ms by what ran just before: "
                    + ", ".join(
                        f"{side} after {before} {statistics.median(values):.1f} (n={len(values)})"
                        for (side, before), values in sorted(after.items())
                    ),
                    file=sys.stderr,
                    flush=True,
                )
                print(
                    f"# size={n}: us/floor {r['us'] / r['floor']:.2f}x (kept connection; reopened "
                    f"{r['reopened']}), a new connection per request {r['new_connection']:.1f} ms = "
                    f"{r['new_connection'] / r['floor']:.2f}x the floor, reasoning_bank/us {r['lib'] / r['us']:.2f}x, "
                    f"library recall@10 vs exact {r['lib_recall']:.3f}, load {r['load_s']:.1f}s (us) / "
                    f"{r['lib_load_s']:.1f}s (library), web worker RSS/PSS MB "
                    f"{', '.join(f'{rss:.0f}/{pss:.0f}' for rss, pss in worker_memory_mb(proc))}, {load_note()}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        stop_server(proc)
        library.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated item counts")
    parser.add_argument(
        "--queries", type=int, default=48, help="queries per size, each sent to all four sides (24 orders)"
    )
    parser.add_argument("--library-python", default="/tmp/rb-lib/bin/python", help="python of the reasoning-bank venv")
    parser.add_argument("--port", type=int, default=None, help="the web server's loopback port (default: a free one)")
    parser.add_argument("--fresh", action="store_true", help="reload the items even if a previous run left them")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads (production: WEB_THREADS=4)")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    for r in run(sizes, args.queries, args.library_python, args.port, args.fresh, args.threads):
        print(
            f"size={r['size']} served={r['served']} us_p50_ms={r['us']:.1f} floor_p50_ms={r['floor']:.1f} "
            f"reasoning_bank_p50_ms={r['lib']:.1f} recall_at_10={r['recall']:.3f}"
        )


if __name__ == "__main__":
    main()
