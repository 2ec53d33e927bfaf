"""The Python client's own cost per call, sync and async, without a network:

    .venv/bin/python bench/client_overhead.py [--calls 2000] [--rounds 7] [--compare DIR]

Each side runs in a process of its own with ``PYTHONPATH`` set to a checkout's
``clients/python`` (this one, and with ``--compare`` the one in DIR), rounds
interleaved so both see the same load. A round makes ``--calls`` calls of each
kind on one client whose httpx transport is an in-memory ``MockTransport``
answering canned JSON: what is timed is the client alone (building the request,
httpx, reading the answer into dataclasses, the retry loop's bookkeeping).
Prints the median µs per call of each kind and side, the ratio, and the load
average. No server, no database.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ITEM = {
    "id": "3f0c9a4e-5b8e-4c1e-9f61-2f4d1c8b7a10",
    "title": "Use the coupon on the cart page",
    "description": "Shopping tasks with a coupon",
    "content": "Sort by price, then apply the coupon on the cart page.",
    "score": 0.8,
    "similarity": 0.8,
}
ANSWERS = {
    "/api/v1/retrieve": {
        "retrieval_id": "5b0c9a4e-5b8e-4c1e-9f61-2f4d1c8b7a10",
        "mode": "items",
        "items": [dict(ITEM, id=f"3f0c9a4e-5b8e-4c1e-9f61-2f4d1c8b7a{n:02d}") for n in range(5)],
        "system_block": "## Lessons\n" + "- a lesson\n" * 5,
        "warnings": [],
    },
    "/api/v1/trajectories": {"id": "7f0c9a4e-5b8e-4c1e-9f61-2f4d1c8b7a10", "status": "received", "url": "/t/1"},
    "/api/v1/token": {
        "prefix": "rb_abc",
        "name": "t",
        "scopes": ["retrieve"],
        "expires_at": None,
        "bank_id": "3f0c9a4e-5b8e-4c1e-9f61-2f4d1c8b7a10",
        "bank": "b",
        "team": "t",
        "retrieval_mode": "items",
        "top_k": 3,
        "rate_limit_per_minute": 600,
    },
}
STEPS = [{"thought": "look", "action": f"click({n})", "observation": "a page"} for n in range(10)]
KINDS = ("token", "retrieve", "record")


def _child(calls: int) -> dict[str, float]:
    """In a side's process: µs per call of each kind, sync and async."""
    import asyncio

    import httpx

    from reasoningbank_client import AsyncClient, Client

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=ANSWERS[request.url.path])

    def call(client, kind):
        if kind == "token":
            return client.token()
        if kind == "retrieve":
            return client.retrieve("book a flight", k=5)
        return client.record("book a flight", steps=STEPS, outcome="success")

    figures: dict[str, float] = {}
    with Client("http://bench", "rb_t", transport=httpx.MockTransport(answer)) as client:
        for kind in KINDS:
            call(client, kind)  # warm
            start = time.perf_counter()
            for _ in range(calls):
                call(client, kind)
            figures[f"sync {kind}"] = (time.perf_counter() - start) / calls * 1e6

    async def run_async() -> None:
        async with AsyncClient("http://bench", "rb_t", transport=httpx.MockTransport(answer)) as client:
            for kind in KINDS:
                await call(client, kind)
                start = time.perf_counter()
                for _ in range(calls):
                    await call(client, kind)
                figures[f"async {kind}"] = (time.perf_counter() - start) / calls * 1e6

    asyncio.run(run_async())
    return figures


def _side(checkout: Path, calls: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(checkout / "clients" / "python"))
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--calls", str(calls)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--compare", type=Path, help="another checkout, measured interleaved with this one")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.calls)))
        return
    sides = {"this": ROOT}
    if args.compare:
        sides["compare"] = args.compare.resolve()
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for n in range(args.rounds):
        order = list(sides) if n % 2 == 0 else list(reversed(sides))
        for name in order:
            runs[name].append(_side(sides[name], args.calls))
    print(f"{args.calls} calls per kind and round, {args.rounds} rounds; load {os.getloadavg()[0]:.2f}")
    header = (
        "| call | " + " | ".join(f"{name} µs" for name in sides) + (" | this ÷ compare |" if args.compare else " |")
    )
    print(header)
    print("|---|" + "---:|" * (len(sides) + (1 if args.compare else 0)))
    for kind in [f"{flavour} {k}" for flavour in ("sync", "async") for k in KINDS]:
        medians = {name: statistics.median(r[kind] for r in runs[name]) for name in sides}
        row = f"| {kind} | " + " | ".join(f"{medians[name]:.1f}" for name in sides)
        if args.compare:
            row += f" | {medians['this'] / medians['compare']:.2f}×"
        print(row + " |")


if __name__ == "__main__":
    main()
