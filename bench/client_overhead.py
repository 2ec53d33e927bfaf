"""The Python client's own cost per call, sync and async, without a network:

    .venv/bin/python bench/client_overhead.py [--calls 2000] [--rounds 7] [--compare DIR]

Each side runs in a process of its own with ``PYTHONPATH`` set to a checkout's
``clients/python`` (this one, and with ``--compare`` the one in DIR), rounds
interleaved so both see the same load. A round makes ``--calls`` calls of each
kind twice: through httpx over an in-memory ``MockTransport`` answering canned
JSON (``via httpx``: what an agent pays on top of the network), and with the
client's httpx ``request`` answering a prebuilt response at once (``own``: the
client's own work, building the request, the retry loop's bookkeeping, reading
the answer into dataclasses; the first quartile over blocks of 100 calls, as it
is a few µs under the noise of a shared machine). Prints both per kind, flavour
and side, the difference of own work between the sides, and the load average.
No server, no database.
"""

from __future__ import annotations

import argparse
import functools
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


BLOCK = 100  # calls per timed block


def _blocks(calls: int, call) -> list[float]:
    call()  # warm
    figures = []
    for _ in range(calls // BLOCK):
        start = time.perf_counter()
        for _ in range(BLOCK):
            call()
        figures.append((time.perf_counter() - start) / BLOCK * 1e6)
    return figures


async def _ablocks(calls: int, call) -> list[float]:
    await call()
    figures = []
    for _ in range(calls // BLOCK):
        start = time.perf_counter()
        for _ in range(BLOCK):
            await call()
        figures.append((time.perf_counter() - start) / BLOCK * 1e6)
    return figures


def _child(calls: int) -> dict[str, list[float]]:
    """In a side's process, µs per call per block of each kind, sync and async: through httpx over a
    ``MockTransport`` (``via httpx``), and with httpx's ``request`` answering a prebuilt response at
    once (``own``: the client's own work, without httpx's)."""
    import asyncio

    import httpx

    from reasoningbank_client import AsyncClient, Client

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=ANSWERS[request.url.path])

    def prebuilt(method, path, **kwargs):
        return PREBUILT[path]

    async def aprebuilt(method, path, **kwargs):
        return PREBUILT[path]

    PREBUILT = {path.removeprefix("/api/v1/"): httpx.Response(200, json=body) for path, body in ANSWERS.items()}
    calls_of = {
        "token": lambda client: client.token,
        "retrieve": lambda client: functools.partial(client.retrieve, "book a flight", k=5),
        "record": lambda client: functools.partial(client.record, "book a flight", steps=STEPS, outcome="success"),
    }
    figures: dict[str, list[float]] = {}
    with (
        Client("http://bench", "rb_t", transport=httpx.MockTransport(answer)) as client,
        Client("http://bench", "rb_t") as bare,
    ):
        bare._http.request = prebuilt  # the one private touch: no HTTP at all
        for kind, of in calls_of.items():
            figures[f"sync {kind} via httpx"] = _blocks(calls, of(client))
            figures[f"sync {kind} own"] = _blocks(calls, of(bare))

    async def run_async() -> None:
        async with (
            AsyncClient("http://bench", "rb_t", transport=httpx.MockTransport(answer)) as client,
            AsyncClient("http://bench", "rb_t") as bare,
        ):
            bare._http.request = aprebuilt
            for kind, of in calls_of.items():
                figures[f"async {kind} via httpx"] = await _ablocks(calls, of(client))
                figures[f"async {kind} own"] = await _ablocks(calls, of(bare))

    asyncio.run(run_async())
    return figures


def _side(checkout: Path, calls: int) -> dict[str, list[float]]:
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
    blocks: dict[str, dict[str, list[float]]] = {name: {} for name in sides}
    for n in range(args.rounds):
        order = list(sides) if n % 2 == 0 else list(reversed(sides))
        for name in order:
            for kind, figures in _side(sides[name], args.calls).items():
                blocks[name].setdefault(kind, []).extend(figures)
    print(f"{args.calls} calls per kind and round, {args.rounds} rounds; load {os.getloadavg()[0]:.2f}")
    names = list(sides)
    columns = [f"{name} {what}" for name in names for what in ("via httpx µs", "own µs")]
    if args.compare:
        columns += ["own: this − compare µs"]
    print("| call | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for kind in [f"{flavour} {k}" for flavour in ("sync", "async") for k in KINDS]:
        via = {name: statistics.median(blocks[name][f"{kind} via httpx"]) for name in names}
        own = {name: _quartile(blocks[name][f"{kind} own"]) for name in names}
        cells = [f"{value:.1f}" for name in names for value in (via[name], own[name])]
        if args.compare:
            cells.append(f"{own['this'] - own['compare']:+.1f}")
        print(f"| {kind} | " + " | ".join(cells) + " |")


def _quartile(figures: list[float]) -> float:
    """The first quartile: the client's own work is a few µs, so the least disturbed blocks tell it."""
    return statistics.quantiles(figures, n=4)[0]


if __name__ == "__main__":
    main()
