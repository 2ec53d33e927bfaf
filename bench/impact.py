"""Impact report benchmark: ``GET /api/v1/impact`` and the Impact page of a
bank with 100k linked trajectories.

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/impact.py [--trajectories 100000] [--runs 30]

Seeds (once; kept in its own database ``rb_bench_impact``) one bank with a
10% holdout and per-item randomisation (item holdout fraction 0.1), 30
approved items, retrievals over 90 days serving 3 of them, and trajectories
linked to them until there are ``--trajectories`` (30% of retrievals send a
MaTTS-style group of 2–4; 5% unjudged), then builds the report's sums from
the stored rows (``retrieval_outcomes_rebuild``) and, like a live bank,
leaves 500 human relabels (through ``judgment_record``) not yet compacted.
Serves the database with gunicorn (1 sync worker) and measures both
answers' wall time on loopback (p50/p95), asserting each is a real report:
a verdict, both arms with judged retrievals, items compared by per-item
randomisation."""

from __future__ import annotations

import argparse
import json
import os
import random
import time
import urllib.request
from datetime import UTC, datetime, timedelta

os.environ.setdefault("RB_BENCH_DB", "rb_bench_impact")

from common import pct, setup_django, start_server, stop_server

ITEMS = 30
CANDIDATES = 3
DAYS = 90


def _seed(n_trajectories: int):
    from django.contrib.auth import get_user_model

    from accounts.models import Bank
    from memories.items.models import ItemStatus, MemoryItem
    from memories.serving.models import RetrievalEvent
    from tests import factories
    from trajectories.judging.verdicts import judgment_record, retrieval_outcomes_rebuild
    from trajectories.models import JudgmentSource, Trajectory

    bank = Bank.objects.filter(slug="impact-bench").first()
    user = get_user_model().objects.filter(username="impact-bench").first()
    if bank is not None and Trajectory.objects.filter(bank=bank).count() >= n_trajectories:
        return bank, user
    if bank is not None:
        bank.delete()
    user = user or get_user_model().objects.create_user("impact-bench")
    team = factories.make_team(owner=user, slug="impact-bench")
    bank = factories.make_bank(team=team, slug="impact-bench", holdout_fraction=0.1, item_holdout_fraction=0.1)
    items = MemoryItem.objects.bulk_create(
        MemoryItem(bank=bank, title=f"Lesson {i}", description="d", content="c", status=ItemStatus.APPROVED)
        for i in range(ITEMS)
    )
    rng = random.Random(7)
    now = datetime.now(UTC)
    quality = [rng.uniform(-0.1, 0.1) for _ in items]
    made, started = 0, time.perf_counter()
    while made < n_trajectories:
        events, verdicts = [], []
        for _ in range(5000):
            holdout = rng.random() < 0.1
            candidates = rng.sample(range(ITEMS), CANDIDATES)
            withheld = [] if holdout else [i for i in candidates if rng.random() < 0.1]
            events.append(
                RetrievalEvent(
                    bank=bank,
                    query="task",
                    mode="items",
                    k=CANDIDATES,
                    arm="holdout" if holdout else "treatment",
                    results=[{"id": str(items[i].public_id), "score": 0.8} for i in candidates],
                    withheld=[str(items[i].public_id) for i in withheld],
                    holdout_fraction=0.1,
                    item_holdout_fraction=0.1,
                )
            )
            p = 0.5 + (0 if holdout else 0.08 + sum(quality[i] for i in candidates if i not in withheld))
            size = 1 if rng.random() >= 0.3 else rng.randint(2, 4)
            verdicts.append(
                [("" if rng.random() < 0.05 else "success" if rng.random() < p else "failure") for _ in range(size)]
            )
        events = RetrievalEvent.objects.bulk_create(events)
        ages = [timedelta(seconds=rng.uniform(0, DAYS * 86400)) for _ in events]
        RetrievalEvent.objects.bulk_update(
            [RetrievalEvent(pk=e.pk, created_at=now - age) for e, age in zip(events, ages)], ["created_at"]
        )
        trajectories = [
            Trajectory(bank=bank, task="task", retrieval=event, verdict=verdict, step_count=rng.randint(3, 12))
            for event, group in zip(events, verdicts)
            for verdict in group
        ][: n_trajectories - made]
        Trajectory.objects.bulk_create(trajectories)
        made += len(trajectories)
        print(f"seeded {made} trajectories, {time.perf_counter() - started:.0f}s", flush=True)
    retrieval_outcomes_rebuild(bank=bank)
    judged = list(
        Trajectory.objects.filter(bank=bank, verdict__in=["success", "failure"]).values_list("pk", flat=True)[:5000]
    )
    for pk in rng.sample(judged, 500):
        trajectory = Trajectory.objects.get(pk=pk)
        label = "failure" if trajectory.verdict == "success" else "success"
        judgment_record(trajectory=trajectory, source=JudgmentSource.HUMAN, label=label, author=user)
    print(f"seeded and summed in {time.perf_counter() - started:.0f}s", flush=True)
    return bank, user


def _session_cookie(user) -> str:
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def _get(url: str, headers: dict) -> tuple[float, int, bytes]:
    started = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as response:
        body = response.read()
        return (time.perf_counter() - started) * 1000, response.status, body


def _check_api(body: bytes) -> dict:
    report = json.loads(body)
    assert report["verdict"] in ("helps", "hurts", "no_difference", "withheld"), report["verdict"]
    assert report["treatment"]["units"] > 0 and report["holdout"]["units"] > 0, report
    assert report["difference"] is not None and report["items"], "a real report has a difference and items"
    assert report["item_comparison"] == "randomised"
    return report


def _check_page(body: bytes) -> None:
    page = body.decode()
    assert 'id="verdict"' in page and 'id="arm-holdout"' in page and 'id="item-outcomes"' in page
    assert "this item&#x27;s own effect" in page or "this item's own effect" in page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    setup_django()
    from django.db import connection

    from memories.serving.models import RetrievalEvent, RetrievalTally
    from tests import factories
    from trajectories.impact.items import item_outcomes
    from trajectories.impact.report import bank_impact
    from trajectories.models import Trajectory

    bank, user = _seed(args.trajectories)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_retrievaltally")  # as autovacuum would after the bulk load
    linked = Trajectory.objects.filter(bank=bank, retrieval__isnull=False).count()
    retrievals = RetrievalEvent.objects.filter(bank=bank).count()
    tallies = RetrievalTally.objects.filter(bank=bank)
    pending = tallies.filter(compacted=False).count()
    print(
        f"bank: {linked} linked trajectories, {retrievals} retrievals, {tallies.count()} tally rows ({pending} pending)"
    )
    token = factories.make_token(bank, scopes=["retrieve"], name=f"bench-{time.time_ns()}")
    cookie = _session_cookie(user)
    connection.close()

    in_process = []
    for _ in range(args.runs):
        started = time.perf_counter()
        report = bank_impact(bank=bank)
        item_outcomes(bank=bank, report=report, limit=20)
        in_process.append((time.perf_counter() - started) * 1000)

    proc, base = start_server()
    try:
        targets = {
            "baseline: GET /api/v1/memories?limit=1": (
                f"{base}/api/v1/memories?limit=1",
                {"Authorization": f"Bearer {token}"},
                lambda body: None,
            ),
            "baseline: bank settings page": (
                f"{base}/banks/{bank.public_id}/settings/",
                {"Cookie": cookie},
                lambda body: None,
            ),
            "GET /api/v1/impact": (f"{base}/api/v1/impact", {"Authorization": f"Bearer {token}"}, _check_api),
            "GET /api/v1/impact?days=30": (
                f"{base}/api/v1/impact?days=30",
                {"Authorization": f"Bearer {token}"},
                _check_api,
            ),
            "Impact page": (f"{base}/banks/{bank.public_id}/impact/", {"Cookie": cookie}, _check_page),
            "Impact page, 30 days": (
                f"{base}/banks/{bank.public_id}/impact/?days=30",
                {"Cookie": cookie},
                _check_page,
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in targets}
        for url, headers, _check in targets.values():
            _get(url, headers)  # warm the worker
        # Round-robin, so a burst of load from other processes hits every target alike.
        for _ in range(args.runs):
            for name, (url, headers, check) in targets.items():
                ms, status, body = _get(url, headers)
                assert status == 200, (name, status)
                found = check(body)
                times[name].append(ms)
                if found and len(times[name]) == 1:
                    print(
                        f"{name}: verdict={found['verdict']} treatment.units={found['treatment']['units']} "
                        f"holdout.units={found['holdout']['units']} items={len(found['items'])}"
                    )
        rows = [(name, pct(values, 50), pct(values, 95)) for name, values in times.items()]
    finally:
        stop_server(proc)
    load = os.getloadavg()[0]
    print(f"\n{linked:,} linked trajectories, {retrievals:,} retrievals, {args.runs} runs each, load1={load:.2f}\n")
    print("| request | p50 ms | p95 ms |\n|---|---|---|")
    for name, p50, p95 in rows:
        print(f"| {name} | {p50:.1f} | {p95:.1f} |")
    print(f"| in-process bank_impact + item_outcomes | {pct(in_process, 50):.1f} | {pct(in_process, 95):.1f} |")


if __name__ == "__main__":
    main()
