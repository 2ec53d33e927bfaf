"""Step retention purge at two sizes in one run: time per purged row, the
plan of each batch's select, and the size of every index of the trajectory
and raw record tables before and after the purge (each measured after the
same VACUUM).

    RB_DATA_DIR=… .venv/bin/python bench/retention.py --sizes 10000 100000

For each size: one bank with a 30-day step retention holding ``n`` finished
trajectories of which 10 % are older than the retention (6 steps, ~1.5 KB),
plus ``n/50`` old ones still in the pipeline; the table also holds earlier
sizes' rows (purged), as production's would. Runs
``trajectory_steps_purge_expired``, asserts exactly the expired finished ones
were purged and a second run is a no-op, and prints the time per purged row,
how many trajectory rows it wrote (none: the purge deletes raw records), and each index's size (bytes) before → after. The
steps are archived into a temporary folder unless ``RB_STEP_ARCHIVE_DIR`` says
otherwise (``off``: no archive)."""

from __future__ import annotations

import argparse
import os
import tempfile
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
EXPIRED_SHARE = 10  # one row in 10 is older than the retention


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
    now = timezone.now()

    def rows(count, status):
        for i in range(count):
            yield Trajectory(
                bank=bank,
                task=f"Book a table {i}",
                steps=STEPS,
                step_count=len(STEPS),
                final_answer=f"Booked for 19:00, confirmation {i}.",
                status=status,
                verdict="success" if status == "done" else "",
            )

    expired = n // EXPIRED_SHARE
    for count, status, days in ((expired, "done", 40), (n - expired, "done", 10), (n // 50, "judging", 40)):
        made = Trajectory.objects.bulk_create(rows(count, status), batch_size=2000)
        pks = [t.pk for t in made]
        for start in range(0, len(pks), 20000):
            Trajectory.objects.filter(pk__in=pks[start : start + 20000]).update(created_at=now - timedelta(days=days))
    return Bank.objects.get(pk=bank.pk), expired


def vacuum_and_sizes() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE trajectories_trajectory")
        cursor.execute("VACUUM ANALYZE trajectories_rawrecord")
        cursor.execute(
            "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index "
            "WHERE indrelid IN ('trajectories_trajectory'::regclass, 'trajectories_rawrecord'::regclass) ORDER BY 1"
        )
        return dict(cursor.fetchall())


def hot_counts() -> tuple[int, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'trajectories_trajectory'::regclass"
        )
        return cursor.fetchone()


def batch_plan(bank) -> str:
    from django.db import transaction
    from django.utils import timezone

    from trajectories.records.retention import purge_batch_query

    cutoff = timezone.now() - timedelta(days=bank.step_retention_days)
    with transaction.atomic():
        return purge_batch_query(bank=bank, cutoff=cutoff, after=None)[:1000].explain()


def run(n: int) -> dict:
    from accounts.models import AuditEvent, Bank
    from trajectories.models import Trajectory
    from trajectories.records.retention import trajectory_steps_purge_expired

    Bank.objects.filter(step_retention_days__isnull=False).update(step_retention_days=None)  # earlier runs' banks
    bank, expired = seed(n)
    before = vacuum_and_sizes()
    plan = batch_plan(bank)
    updates_before, _hot = hot_counts()
    started = time.perf_counter()
    purged = trajectory_steps_purge_expired()
    seconds = time.perf_counter() - started
    updates_after, _hot = hot_counts()
    after = vacuum_and_sizes()
    assert purged == {bank.pk: expired}, purged
    assert Trajectory.objects.filter(bank=bank, raw__isnull=True).count() == expired
    assert not Trajectory.objects.filter(bank=bank, status="judging", raw__isnull=True).exists()
    assert AuditEvent.objects.filter(bank=bank, action="trajectory.purge_steps").count() == 1
    assert trajectory_steps_purge_expired() == {}
    updates = updates_after - updates_before
    return {
        "n": n,
        "purged": expired,
        "seconds": seconds,
        "us_per_row": seconds / expired * 1e6,
        "trajectory rows written": updates,
        "plan": plan,
        "before": before,
        "after": after,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs=2, default=[20000, 200000])
    args = parser.parse_args()
    os.environ.setdefault("RB_STEP_ARCHIVE_DIR", tempfile.mkdtemp(prefix="rb-archive-"))
    setup_django()
    results = [run(n) for n in args.sizes]
    for r in results:
        print(f"\n== {r['n']:,} trajectories, {r['purged']:,} expired ==")
        print(
            f"purge {r['seconds']:.2f} s, {r['us_per_row']:.0f} µs per row,"
            f" trajectory rows written {r['trajectory rows written']:,}"
        )
        print("batch select plan:\n  " + r["plan"].replace("\n", "\n  "))
        for name, size in r["before"].items():
            grown = r["after"][name] - size
            print(f"  {name}: {size:,} -> {r['after'][name]:,} ({grown / size:+.1%})")
    small, big = results
    print(f"\ntime per row, {big['n']:,} / {small['n']:,}: {big['us_per_row'] / small['us_per_row']:.2f}x")
    print(f"loadavg={os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
