"""Goal 1 of issue 14 without the reasoning-bank library: ``POST /api/v1/retrieve``
through gunicorn (bench/common.py) against the floor (in-process query embedding
+ the production SQL search, ``approved_items_search``), interleaved per query
(alternating which goes first), on the items compare_reasoning_bank.py loads
(reused when a previous run left the same size). Each answer is asserted to
serve k items.

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/us_vs_floor.py --sizes 100000 [--queries 40] [--compare DIR]

Ends with one line per size:
``size=<N> served=<k> us_p50_ms=<x> floor_p50_ms=<y> us_over_floor=<x/y>`` and the machine's load.
With ``--compare DIR`` (another checkout, e.g. the code before a change) a
second gunicorn serves the same database from DIR, and each query goes to
all three (this server, DIR's, the floor) in a rotating order; a line
``compare=DIR size=<N> …`` follows with DIR's figures against the same floor.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_note, setup_django, start_server, stop_server
from compare_reasoning_bank import CENTRE_TEXTS, K, _post
from retrieval import QUERY_TEXTS, _reset_and_load


def run(sizes: list[int], queries: int, port: int | None, compare: Path | None = None) -> None:
    setup_django()
    from memories import selectors
    from memories.embeddings import embed_text, embed_texts

    rng = np.random.default_rng(7)
    centres = embed_texts(CENTRE_TEXTS)
    texts = [QUERY_TEXTS[i % len(QUERY_TEXTS)] + f" (#{i})" for i in range(queries)]
    proc, base = start_server(port=port)
    other_proc, other_base = start_server(root=compare) if compare else (None, None)
    try:
        for n in sizes:
            data = _reset_and_load(n, rng, centres, kind="text", reuse=True)
            bank, secret = data["bank"], data["secret"]

            def floor(text: str, bank=bank) -> float:
                started = time.perf_counter()
                found = selectors.approved_items_search(bank=bank, vector=embed_text(text), k=K, min_similarity=-1.0)
                elapsed = (time.perf_counter() - started) * 1000
                assert len(found) == K, len(found)
                return elapsed

            sides = {
                "us": lambda text, secret=secret: _post(base, secret, text),
                "floor": floor,
                **({"compare": lambda text, secret=secret: _post(other_base, secret, text)} if other_base else {}),
            }
            for text in texts[:3]:  # warm them all
                for measure in sides.values():
                    measure(text)
            times: dict[str, list[float]] = {name: [] for name in sides}
            order = list(sides)
            for i, text in enumerate(texts):
                for name in order[i % len(order) :] + order[: i % len(order)]:  # each side goes first in turn
                    times[name].append(sides[name](text))
            p50 = {name: statistics.median(values) for name, values in times.items()}
            u, f = p50["us"], p50["floor"]
            print(
                f"size={n} served={K} us_p50_ms={u:.1f} floor_p50_ms={f:.1f} us_over_floor={u / f:.2f} {load_note()}",
                flush=True,
            )
            if compare:
                c = p50["compare"]
                print(
                    f"compare={compare} size={n} served={K} us_p50_ms={c:.1f} floor_p50_ms={f:.1f} "
                    f"us_over_floor={c / f:.2f} {load_note()}",
                    flush=True,
                )
    finally:
        stop_server(proc)
        if other_proc:
            stop_server(other_proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000", help="comma-separated item counts")
    parser.add_argument("--queries", type=int, default=40, help="queries per size, each sent to both")
    parser.add_argument("--port", type=int, default=None, help="the web server's loopback port (default: a free one)")
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        help="another checkout served side by side (e.g. the code before a change)",
    )
    args = parser.parse_args()
    run([int(s) for s in args.sizes.split(",")], args.queries, args.port, args.compare)


if __name__ == "__main__":
    main()
