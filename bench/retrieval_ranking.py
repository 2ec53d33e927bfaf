"""Utility ranking's cost: POST /api/v1/retrieve p50 with a bank's utility
ranking on and off, side by side in one run against the same 100k-item bank
(bench/retrieval.py's data: random unit vectors around cluster centres),
k=10. A share of the items carries outcome data (an effect and its
observations), so the second phase has utilities to blend. The two settings
alternate query by query (which goes first alternates too), so load from
other processes falls on both alike; the in-process service
(``retrieval_preview``) is timed the same way.

    python bench/retrieval_ranking.py [--size 100000] [--queries 200] [--reuse]

The goal: ranking on costs at most 1.1× ranking off at p50 (the script says
whether it holds)."""

from __future__ import annotations

import time

import numpy as np
from common import on_off_main, pct, setup_django, start_server, stop_server
from retrieval import CLUSTERS, DIM, QUERY_TEXTS, _post, _reset_and_load, _unit

GOAL = 1.1
MEASURED_SHARE = 0.3  # items with outcome data


def _outcomes(bank) -> int:
    """Give MEASURED_SHARE of the bank's items an effect in ±0.2 and up to 500 observations (seeded)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT setseed(0.42)")
        cur.execute(
            "UPDATE memories_memoryitem SET outcome_effect = (random() - 0.5) * 0.4,"
            " outcome_n = floor(random() * 500)::int WHERE bank_id = %s AND random() < %s",
            [bank.pk, MEASURED_SHARE],
        )
        return cur.rowcount


def _set_ranking(bank, on: bool) -> None:
    from accounts.models import Bank

    Bank.objects.filter(pk=bank.pk).update(utility_ranking=on)
    bank.utility_ranking = on


def run(size: int, queries: int, reuse: bool) -> dict:
    setup_django()
    from memories.embedding.model import embed_text
    from memories.serving.preview import retrieval_preview

    rng = np.random.default_rng(42)
    centres = _unit(rng.normal(size=(CLUSTERS, DIM)).astype(np.float32))
    embed_text("warm up")
    data = _reset_and_load(size, rng, centres, reuse=reuse)
    bank, secret = data["bank"], data["secret"]
    measured = _outcomes(bank)
    texts = [QUERY_TEXTS[i % len(QUERY_TEXTS)] + f" (#{i})" for i in range(queries)]
    http: dict[bool, list[float]] = {False: [], True: []}
    service: dict[bool, list[float]] = {False: [], True: []}
    proc, base = start_server()
    try:
        for on in (False, True):  # warm both paths
            _set_ranking(bank, on)
            for text in texts[:5]:
                _post(base, secret, text)
        for i, text in enumerate(texts):
            for on in (i % 2 == 0, i % 2 == 1):
                _set_ranking(bank, on)
                http[on].append(_post(base, secret, text))
                started = time.perf_counter()
                served = retrieval_preview(bank=bank, query=text, k=10).items
                service[on].append((time.perf_counter() - started) * 1000)
                assert len(served) == 10
    finally:
        stop_server(proc)
        _set_ranking(bank, False)
    return {
        "size": size,
        "queries": queries,
        "measured": measured,
        "http": {on: pct(values, 50) for on, values in http.items()},
        "http_p95": {on: pct(values, 95) for on, values in http.items()},
        "service": {on: pct(values, 50) for on, values in service.items()},
    }


def _table(r: dict) -> str:
    http_ratio = r["http"][True] / r["http"][False]
    service_ratio = r["service"][True] / r["service"][False]
    return "\n".join(
        [
            "| items | with outcomes | queries | ranking | HTTP p50 ms | HTTP p95 ms | service p50 ms |",
            "|---:|---:|---:|---|---:|---:|---:|",
            *(
                f"| {r['size']:,} | {r['measured']:,} | {r['queries']} | {'on' if on else 'off'} "
                f"| {r['http'][on]:.1f} | {r['http_p95'][on]:.1f} | {r['service'][on]:.1f} |"
                for on in (False, True)
            ),
            "",
            f"on / off at p50: HTTP {http_ratio:.3f}×, service {service_ratio:.3f}× "
            f"(goal ≤ {GOAL}×: {'met' if http_ratio <= GOAL else 'NOT met'})",
        ]
    )


if __name__ == "__main__":
    on_off_main(__doc__, "Utility ranking on vs off", run, _table)
