"""What discarding an unread request body costs (reasoningbank_site/request_body.py).

A body over RB_API_MAX_BODY_BYTES is answered 413 from its Content-Length; the
server reads and drops the rest (up to 64 MiB) before answering, so a client
that asks to close the connection (urllib here) gets the answer, not a reset.
For each size: the median time until urllib holds the 413, and what it got.
Also the cost for a request whose body was read: one empty read, in process.

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/body_discard.py [--sizes 6,30,64,80] [--tries 5] [--compare DIR]
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
import urllib.error
import urllib.request
from pathlib import Path

import common


def post(base: str, body: bytes) -> tuple[float, str]:
    started = time.perf_counter()
    request = urllib.request.Request(
        f"{base}/api/v1/trajectories", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            outcome = str(response.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        outcome = str(exc.code)
    except OSError as exc:  # a broken pipe or a reset: what the client sees without the discard
        outcome = type(getattr(exc, "reason", exc)).__name__
    return time.perf_counter() - started, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="6,30,64,80", help="body sizes in MiB")
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--compare", type=Path, help="another checkout, served side by side")
    args = parser.parse_args()
    common.setup_django()
    from reasoningbank_site.request_body import unread_body_discard

    servers = [("this", *common.start_server(threads=4, workers=2))]
    if args.compare:
        servers.append(("compare", *common.start_server(threads=4, workers=2, root=args.compare.resolve())))
    try:
        print(f"# unread body discard  ({common.load_note()})")
        print("| MiB | server | median ms | answers |")
        print("|---|---|---|---|")
        for mib in (int(s) for s in args.sizes.split(",")):
            body = b"x" * (mib * 2**20)
            for name, _proc, base in servers:
                results = [post(base, body) for _ in range(args.tries)]
                answers = sorted({outcome for _, outcome in results})
                print(
                    f"| {mib} | {name} | {statistics.median(t for t, _ in results) * 1000:.0f} | {', '.join(answers)} |"
                )
    finally:
        for _name, proc, _base in servers:
            common.stop_server(proc)
    rounds = 200_000
    started = time.perf_counter()
    for _ in range(rounds):
        unread_body_discard({"wsgi.input": io.BytesIO(b"")})
    print(f"\nA request whose body was read: {(time.perf_counter() - started) / rounds * 1e6:.2f} µs (one empty read)")


if __name__ == "__main__":
    main()
