"""A retrieve after a pause, over a kept connection and over a new one: what
an agent sees when it calls again after thinking for a second, every
request with a query of its own.

    RB_DATA_DIR=/tmp/rb-ret-bench .venv/bin/python bench/retrieval_pause.py [--size 100000] [--rounds 30] [--pause 0.9]

One gunicorn as production runs it (gthread, ``--threads`` 4), the items of
compare_reasoning_bank.py (reused when a previous run left the same size).
Each round, after ``--pause`` seconds idle each: a retrieve over the kept
connection (its previous request was the one a pause earlier), then one over a
new connection; then, after two pauses (past gunicorn's 2 s keep-alive, so the
kept connection is closed by the server and opened again: counted), one more
over the kept connection; then, after a pause, the floor (in-process query
embedding + the production SQL search), which crosses no HTTP and no web
process: what the pause costs the machine itself. Every answer is asserted to
serve k items and, by the end, the HTTP ones to have been logged. Ends with one
line per kind:
``kind=<kept_again|new|kept_reopened|floor> n=<n> p50_ms=<x> p95_ms=<y> max_ms=<z>``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    KeptConnection,
    floor_search,
    load_note,
    pct,
    retrievals_logged,
    setup_django,
    start_server,
    stop_server,
)
from compare_reasoning_bank import CENTRE_TEXTS, K, _post
from retrieval import QUERY_TEXTS, _reset_and_load

GUNICORN_KEEPALIVE_S = 2.0  # gunicorn's default --keep-alive, which bench/common.start_server keeps


def run(size: int, rounds: int, pause: float, threads: int) -> dict[str, list[float]]:
    setup_django()
    from memories.embedding.model import embed_texts
    from memories.serving.models import RetrievalEvent

    data = _reset_and_load(size, np.random.default_rng(7), embed_texts(CENTRE_TEXTS), kind="text", reuse=True)
    bank, secret = data["bank"], data["secret"]
    # A different query for every request: a query near one searched just before finds the index pages warm,
    # which would flatter whichever kind runs second.
    texts = [QUERY_TEXTS[i % len(QUERY_TEXTS)] + f" (#{i})" for i in range(4 * rounds + 3)]

    def floor(text: str) -> float:
        return floor_search(bank, text, K)[0]

    proc, base = start_server(threads=threads)
    kept = KeptConnection(base)
    times: dict[str, list[float]] = {"kept_again": [], "new": [], "kept_reopened": [], "floor": []}
    try:
        logged_before = RetrievalEvent.objects.filter(bank=bank).count()
        for text in texts[:3]:  # warm
            kept.retrieve(secret, text, K)
            _post(base, secret, text)
            floor(text)
        sent = 6
        for i in range(rounds):
            kept_text, new_text, reopened_text, floor_text = texts[3 + 4 * i : 7 + 4 * i]
            time.sleep(pause)
            times["kept_again"].append(kept.retrieve(secret, kept_text, K))
            time.sleep(pause)
            times["new"].append(_post(base, secret, new_text))
            time.sleep(max(2 * pause + 0.5, GUNICORN_KEEPALIVE_S + 0.3))  # past the keep-alive, whatever the pause
            reopened = kept.reopened
            times["kept_reopened"].append(kept.retrieve(secret, reopened_text, K))
            assert kept.reopened == reopened + 1, "the kept connection outlived gunicorn's keep-alive"
            time.sleep(pause)
            times["floor"].append(floor(floor_text))
            sent += 3
        retrievals_logged(bank, logged_before, sent)
    finally:
        kept.close()
        stop_server(proc)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="items in the searched bank")
    parser.add_argument("--rounds", type=int, default=30, help="rounds of the three kinds")
    parser.add_argument("--pause", type=float, default=0.9, help="seconds idle before each retrieve (< 2: kept)")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads (production: WEB_THREADS=4)")
    args = parser.parse_args()
    if not 0 < args.pause < 2:
        parser.error("--pause must be between 0 and 2 s (gunicorn keeps an idle connection 2 s)")
    for kind, values in run(args.size, args.rounds, args.pause, args.threads).items():
        print(
            f"kind={kind} n={len(values)} p50_ms={statistics.median(values):.1f} p95_ms={pct(values, 95):.1f} "
            f"max_ms={max(values):.1f} pause_s={args.pause} {load_note()}",
            flush=True,
        )


if __name__ == "__main__":
    main()
