"""The first retrievals after a restart: start gunicorn (the production
setup: 2 workers × ``--threads`` 4 threads (WEB_CONCURRENCY × WEB_THREADS), one
embedding thread each), and as soon as it accepts
connections send 20 retrievals one after another, timing each, then 30 more
as the steady state; stop it and do it again. Each worker warms up before it
accepts (reasoningbank_site/wsgi.py: model loaded, one query embedded, one
vector search), so no request should wait for the model; the goal is no
request slower than 3× the steady p50, the first included. Also prints
each web worker's RSS and PSS (PSS splits shared pages, so the sum is what
the workers cost together).

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/retrieval_restart.py [--size 10000] [--restarts 3]
        [--workers 2] [--threads 4] [--fresh]

Every answer is asserted to serve 10 items. Ends with
``restarts=<n> start_s=<median time until it accepts> first_ms=<worst first request> worst_first20_ms=<x>
steady_p50_ms=<y> worst_ratio=<x/y> rss_mb=<per worker> pss_mb=<per worker>``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_note, pct, setup_django, start_server, stop_server, worker_memory_mb
from compare_reasoning_bank import CENTRE_TEXTS, _post
from retrieval import QUERY_TEXTS, _reset_and_load

FIRST = 20
STEADY = 30


def run(size: int, restarts: int, workers: int, threads: int, fresh: bool) -> dict:
    setup_django()
    from memories.embedding.model import embed_texts

    data = _reset_and_load(size, np.random.default_rng(7), embed_texts(CENTRE_TEXTS), kind="text", reuse=not fresh)
    secret = data["secret"]
    texts = [QUERY_TEXTS[i % len(QUERY_TEXTS)] + f" (restart #{i})" for i in range(FIRST + STEADY)]
    starts, firsts, worst_first, steady, memory = [], [], [], [], []
    for restart in range(restarts):
        started = time.perf_counter()
        proc, base = start_server(workers=workers, threads=threads)
        starts.append(time.perf_counter() - started)
        try:
            times = [_post(base, secret, text) for text in texts]
            memory = worker_memory_mb(proc)
        finally:
            stop_server(proc)
        p50 = statistics.median(times[FIRST:])
        firsts.append(times[0])
        worst_first.append(max(times[:FIRST]))
        steady.append(p50)
        print(
            f"# restart {restart + 1}: accepts after {starts[-1]:.1f} s; first {times[0]:.1f} ms, "
            f"worst of the first {FIRST} {max(times[:FIRST]):.1f} ms (request {times.index(max(times[:FIRST])) + 1}), "
            f"steady p50 {p50:.1f} ms p95 {pct(times[FIRST:], 95):.1f} ms; {load_note()}",
            file=sys.stderr,
            flush=True,
        )
    steady_p50 = statistics.median(steady)
    return {
        "restarts": restarts,
        "start_s": statistics.median(starts),
        "first_ms": max(firsts),
        "worst_first20_ms": max(worst_first),
        "steady_p50_ms": steady_p50,
        "worst_ratio": max(w / s for w, s in zip(worst_first, steady)),
        "memory": memory,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="items in the searched bank")
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (production: WEB_CONCURRENCY=2)")
    parser.add_argument("--threads", type=int, default=4, help="threads per worker (production: WEB_THREADS=4)")
    parser.add_argument("--fresh", action="store_true", help="reload the items even if a previous run left them")
    args = parser.parse_args()
    r = run(args.size, args.restarts, args.workers, args.threads, args.fresh)
    print(
        f"restarts={r['restarts']} start_s={r['start_s']:.1f} first_ms={r['first_ms']:.1f} "
        f"worst_first20_ms={r['worst_first20_ms']:.1f} steady_p50_ms={r['steady_p50_ms']:.1f} "
        f"worst_ratio={r['worst_ratio']:.2f} rss_mb={','.join(f'{rss:.0f}' for rss, _ in r['memory'])} "
        f"pss_mb={','.join(f'{pss:.0f}' for _, pss in r['memory'])}"
    )


if __name__ == "__main__":
    main()
