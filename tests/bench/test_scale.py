"""bench/scale.py at a tiny size, so the script cannot rot: it seeds two
databases by COPY (the models' own tables, through the project's own tally
rebuild and release publishing), serves each with a real gunicorn and
measures every row of its table, each request asserted to serve what a
user's would. Its databases are dropped after."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from memories.serving.rollups import rollup_before
from tests import migrated

ROOT = Path(__file__).resolve().parents[2]
ROWS = (
    "dashboard",
    "dashboard live refresh",
    "Impact",
    "releases",
    "review queue",
    "trajectory list",
    "trajectory page",
    "trajectory search",
    "items list",
    "reviewers",
    "team",
    "evaluations",
    "export: chat JSONL, successes, first byte",
    "retrieve, new connection",
    "retrieve, kept connection",
    "floor",
    "batch ingest, 50 trajectories",
    "retention purge, ms per row",
    "indexes grown by the purge",
    "HNSW build, s",
    "backup (pg_dump), s",
    "dashboard report, computed (worker)",
    "reviewers figures, computed (worker)",
    "Impact per-item table, all time, computed (worker)",
    "trajectories_trajectory",
    "memories_retrievaltally",
)


def _server():
    db = settings.DATABASES["default"]
    params = {"host": db.get("HOST"), "port": db.get("PORT"), "user": db.get("USER"), "password": db.get("PASSWORD")}
    return {k: v for k, v in params.items() if v}


@pytest.fixture
def bench_db(migrated_template, django_db_blocker):
    """The bench's three databases, created already migrated when the suite has the migrated test database
    (copies of it: the bench's own `migrate` then has nothing to apply); else the bench creates and migrates them."""
    name = f"rb_test_scale_{uuid.uuid4().hex[:8]}"
    databases = [name, *(f"{name}_{n}" for n in (200, 1000))]
    if migrated_template:
        with django_db_blocker.unblock():
            for database in databases:
                migrated.create_database(database)
    yield name
    with psycopg.connect(**_server(), dbname="postgres", autocommit=True) as conn:
        for database in databases:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def test_scale_bench_seeds_both_sizes_and_measures_every_row(bench_db):
    env = {**os.environ, "RB_BENCH_DB": bench_db, "RB_DATABASE_NAME": bench_db}
    run = subprocess.run(
        [sys.executable, "bench/scale.py", "--sizes", "200,1000", "--runs", "1", "--other-banks", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    table = run.stdout
    assert "## A bank at 200 and 1,000 trajectories" in table
    for row in ROWS:
        assert f"| {row}" in table, (row, table)
    # Each part of each seed ran, and was recorded as done.
    with psycopg.connect(**_server(), dbname=f"{bench_db}_1000") as conn:
        parts = {name for (name,) in conn.execute("SELECT name FROM bench_scale_parts")}
        trajectories = conn.execute(
            "SELECT count(*) FROM trajectories_trajectory t JOIN accounts_bank b ON b.id = t.bank_id"
            " WHERE b.slug = 'bench' AND t.task ~ '^Task [0-9]+:'"
        ).fetchone()[0]
        tallies = conn.execute("SELECT count(*) FROM memories_retrievaltally").fetchone()[0]
        # The tallies as beat keeps them: the months older than ROLLUP_AFTER_DAYS rolled up ...
        before = rollup_before(datetime.now(UTC).date())
        old_daily, monthly = conn.execute(
            "SELECT count(*) FILTER (WHERE NOT monthly AND day < %s), count(*) FILTER (WHERE monthly)"
            " FROM memories_retrievaltally",
            [before],
        ).fetchone()
        # ... with the same sums: judged first retrievals that had candidates, per arm.
        tallied = dict(
            conn.execute("SELECT arm, SUM(units) FROM memories_retrievaltally WHERE item IS NULL GROUP BY arm")
        )
        counted = dict(
            conn.execute(
                "SELECT arm, count(*) FROM memories_retrievalevent WHERE run_id IS NULL AND judged > 0"
                " AND jsonb_array_length(results) > 0 GROUP BY arm"
            )
        )
    assert {"items", "release 1", "release 2", "activity", "other banks", "tally upkeep", "hnsw", "complete"} <= parts
    assert old_daily == 0
    assert monthly > 0
    assert tallied == counted and sum(counted.values()) > 0
    assert trajectories == 1000  # as seeded (the batch ingests' "Task ingested …" rows aside)
    assert tallies > 0
