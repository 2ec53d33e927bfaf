"""A canary's cost: POST /api/v1/retrieve p50 with a 50 % canary on and
off, side by side in one run against the same 100k-item bank
(bench/retrieval.py's data), k=10. Off: the bank publishes automatically and
production is its approved set (the search filters on the status, as before
releases). On: release 2 (release 1 without 1 % of its items) is the canary
for half the retrievals; the bank then publishes by hand, so both arms
search a release's membership. The settings alternate query by query (which
goes first alternates too), so load from other processes falls on both
alike; each answer's release is counted to check the split.

    python bench/release_canary.py [--size 100000] [--queries 200] [--reuse]

The goal: canary on costs at most 1.1× canary off at p50 (the script says
whether it holds)."""

from __future__ import annotations

import numpy as np
from common import on_off_main, pct, setup_django, start_server, stop_server
from retrieval import CLUSTERS, DIM, QUERY_TEXTS, _reset_and_load, _unit, retrieve_timed

GOAL = 1.1
CANARY = 0.5
REMOVED_SHARE = 0.01  # items of release 1 not in release 2


def _releases(bank) -> None:
    """Releases 1 (every item) and 2 (without REMOVED_SHARE of them), written as publishing writes them."""
    from django.db import connection

    from memories.releases.models import BankReleasing, Release, ReleaseMember

    ReleaseMember.objects.filter(bank=bank).delete()
    BankReleasing.objects.filter(bank=bank).delete()
    Release.objects.filter(bank=bank).delete()
    one = Release.objects.create(bank=bank, number=1, source="published")
    two = Release.objects.create(bank=bank, number=2, source="published")
    with connection.cursor() as cur:
        cur.execute("SELECT setseed(0.17)")
        cur.execute(
            "INSERT INTO memories_releasemember (bank_id, item_id, version, added_in, removed_in)"
            " SELECT bank_id, id, 0, 1, CASE WHEN random() < %s THEN 2 END FROM memories_memoryitem"
            " WHERE bank_id = %s AND status = 'approved'",
            [REMOVED_SHARE, bank.pk],
        )
        cur.execute("ANALYZE memories_releasemember")
    BankReleasing.objects.create(bank=bank, latest=2, production=one, canary=two, canary_fraction=CANARY)


def _set_canary(bank, on: bool) -> None:
    """What the release services copy onto the bank row (memories.releases.labels.serving_sync)."""
    from accounts.models import Bank

    values = (
        {"release_production": 1, "release_canary": 2, "release_canary_fraction": CANARY, "release_filtered": True}
        if on
        else {"release_production": 2, "release_canary": None, "release_canary_fraction": 0, "release_filtered": False}
    )
    Bank.objects.filter(pk=bank.pk).update(**values)


def run(size: int, queries: int, reuse: bool) -> dict:
    setup_django()
    from memories.embedding.model import embed_text

    rng = np.random.default_rng(42)
    centres = _unit(rng.normal(size=(CLUSTERS, DIM)).astype(np.float32))
    embed_text("warm up")
    data = _reset_and_load(size, rng, centres, reuse=reuse)
    bank, secret = data["bank"], data["secret"]
    _releases(bank)
    texts = [QUERY_TEXTS[i % len(QUERY_TEXTS)] + f" (#{i})" for i in range(queries)]
    http: dict[bool, list[float]] = {False: [], True: []}
    served: dict[int | None, int] = {}
    proc, base = start_server()
    try:
        for on in (False, True):  # warm both paths
            _set_canary(bank, on)
            for text in texts[:5]:
                retrieve_timed(base, secret, text)
        for i, text in enumerate(texts):
            for on in (i % 2 == 0, i % 2 == 1):
                _set_canary(bank, on)
                elapsed, answer = retrieve_timed(base, secret, text)
                release = answer["release"]
                http[on].append(elapsed)
                if on:
                    served[release] = served.get(release, 0) + 1
                else:
                    assert release == 2, release
    finally:
        stop_server(proc)
        _set_canary(bank, False)
    return {
        "size": size,
        "queries": queries,
        "http": {on: pct(values, 50) for on, values in http.items()},
        "http_p95": {on: pct(values, 95) for on, values in http.items()},
        "canary_share": served.get(2, 0) / max(1, sum(served.values())),
    }


def _table(r: dict) -> str:
    ratio = r["http"][True] / r["http"][False]
    return "\n".join(
        [
            "| items | queries | canary | HTTP p50 ms | HTTP p95 ms |",
            "|---:|---:|---|---:|---:|",
            *(
                f"| {r['size']:,} | {r['queries']} | {'50 % (both arms by release)' if on else 'off (approved set)'} "
                f"| {r['http'][on]:.1f} | {r['http_p95'][on]:.1f} |"
                for on in (False, True)
            ),
            "",
            f"on / off at p50: {ratio:.3f}× (goal ≤ {GOAL}×: {'met' if ratio <= GOAL else 'NOT met'}); "
            f"canary share served: {r['canary_share'] * 100:.1f} %",
        ]
    )


if __name__ == "__main__":
    on_off_main(__doc__, "Canary on vs off", run, _table)
