"""Step retention purge: how long the hourly beat task takes, and that it is
bulk (a few queries per batch of 1,000 rows, not one per trajectory).

    RB_DATA_DIR=… .venv/bin/python bench/retention.py --n 20000

Seeds one bank with ``n`` finished trajectories older than its 30-day
retention (6 steps, ~1.5 KB each), ``n/10`` recent ones and ``n/10`` old ones
still in the pipeline, then runs ``trajectory_steps_purge_expired`` and
asserts exactly the expired finished ones were purged, one audit event was written,
and a second run is a no-op."""

from __future__ import annotations

import argparse
import os
import time
import uuid
from datetime import timedelta

from common import setup_django

STEPS = [
    {"kind": "user", "content": "Book a table for two at 19:00 for Jane Roe, phone +44 20 7946 0000."},
    {"kind": "thought", "content": "Search for the restaurant's booking page first. " * 4},
    {"kind": "tool_call", "name": "web_search", "arguments": '{"q": "restaurant booking"}', "content": ""},
    {"kind": "tool_result", "name": "web_search", "content": "Results: " + "x" * 900},
    {"kind": "action", "content": "book(time='19:00', guests=2)"},
    {"kind": "answer", "content": "Booked for 19:00, confirmation 4711."},
]


def seed(n: int):
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from accounts.models import Bank
    from accounts.teams.banks import bank_create
    from accounts.teams.services import team_create
    from trajectories.models import Trajectory

    user = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:8]}")
    team = team_create(name=f"Retention {uuid.uuid4().hex[:6]}", owner=user)
    bank = bank_create(team=team, name="Retention bench", step_retention_days=30)
    old = timezone.now() - timedelta(days=40)

    def rows(count, status):
        for i in range(count):
            yield Trajectory(
                bank=bank,
                task=f"Book a table {i}",
                steps=STEPS,
                step_count=len(STEPS),
                final_answer="Booked for 19:00.",
                status=status,
                verdict="success" if status == "done" else "",
            )

    for count, status, created in ((n, "done", old), (n // 10, "done", None), (n // 10, "judging", old)):
        made = Trajectory.objects.bulk_create(rows(count, status), batch_size=2000)
        if created is not None:
            Trajectory.objects.filter(pk__in=[t.pk for t in made]).update(created_at=created)
    return Bank.objects.get(pk=bank.pk)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20000)
    args = parser.parse_args()
    setup_django()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts.models import AuditEvent, Bank
    from trajectories.models import Trajectory
    from trajectories.records.retention import trajectory_steps_purge_expired

    Bank.objects.filter(step_retention_days__isnull=False).update(step_retention_days=None)  # banks other runs left
    bank = seed(args.n)
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        purged = trajectory_steps_purge_expired()
        first = time.perf_counter() - started
    assert purged == {bank.pk: args.n}, purged
    assert Trajectory.objects.filter(bank=bank, steps_purged_at__isnull=False).count() == args.n
    assert not Trajectory.objects.filter(bank=bank, status="judging", steps_purged_at__isnull=False).exists()
    assert not Trajectory.objects.filter(bank=bank, steps_purged_at__isnull=False).exclude(steps=[]).exists()
    assert AuditEvent.objects.filter(bank=bank, action="trajectory.purge_steps").count() == 1
    started = time.perf_counter()
    assert trajectory_steps_purge_expired() == {}
    second = time.perf_counter() - started
    print(
        f"purged={args.n} first_run_s={first:.2f} rows_per_s={args.n / first:.0f} queries={len(queries)} "
        f"second_run_ms={second * 1000:.1f} loadavg={os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
