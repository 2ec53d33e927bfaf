"""The embedded PostgreSQL's settings, sized to the machine it runs on.

PostgreSQL's defaults (shared_buffers 128 MB, work_mem 4 MB, maintenance_work_mem 64 MB) are sized for a
small shared host: at a million trajectories the reports' hash aggregates spill to disk and an HNSW build
pages its graph out. Before every start of the embedded server (a new data directory or an existing one)
``write_conf`` writes ``reasoningbank.conf`` in the data directory and makes ``postgresql.conf`` include it
(a line at its end). What wins, last first:

1. ``ALTER SYSTEM`` (PostgreSQL's own ``postgresql.auto.conf``, read after everything else);
2. ``RB_POSTGRES_SETTINGS`` (``name=value`` pairs separated by commas), written after the sized values;
3. the sized values below.

Settings that need a restart (shared_buffers, max_worker_processes) take effect at the server's next
start; the others are reloaded when a process attaches to a server already running."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

CONF_NAME = "reasoningbank.conf"
INCLUDE_LINE = f"include_if_exists = '{CONF_NAME}'"
OVERRIDE_ENV = "RB_POSTGRES_SETTINGS"

MB = 1024 * 1024
GB = 1024 * MB


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def _mb(size: int) -> str:
    return f"{size // MB}MB"


def sized_settings(*, ram: int, cores: int) -> dict[str, str]:
    """The settings for a machine with ``ram`` bytes of memory and ``cores`` CPUs. The app's own processes
    (web threads, workers, the embedding model) share the machine, so PostgreSQL takes a quarter of it for
    its buffers and counts on half of it as cache."""
    return {
        # PostgreSQL's own cache: a quarter of the memory, at most 4 GB (the OS page cache does the rest).
        "shared_buffers": _mb(_clamp(ram // 4, 128 * MB, 4 * GB)),
        # What the planner counts on finding in a cache (its buffers plus the OS's): index scans look cheaper.
        "effective_cache_size": _mb(_clamp(ram // 2, 512 * MB, 16 * GB)),
        # Per sort or hash, per backend: the reports' aggregates over tallies and judgments stay in memory;
        # moderate, since a hundred connections may each run a few at once.
        "work_mem": _mb(_clamp(ram // 400, 4 * MB, 64 * MB)),
        # Index builds (HNSW over every item's embedding), restores and VACUUM.
        "maintenance_work_mem": _mb(_clamp(ram // 16, 64 * MB, 2 * GB)),
        "max_parallel_maintenance_workers": str(_clamp(cores // 2, 1, 4)),
        "max_parallel_workers_per_gather": str(_clamp(cores // 2, 1, 4)),
        "max_parallel_workers": str(_clamp(cores, 2, 8)),
        # The data directory is on a local disk, an SSD on any machine this runs on today.
        "random_page_cost": "1.1",
        "effective_io_concurrency": "200",
        # Bulk loads and restores write a lot of WAL: fewer forced checkpoints while they run.
        "max_wal_size": "2GB",
    }


def machine_settings() -> dict[str, str]:
    return sized_settings(ram=psutil.virtual_memory().total, cores=psutil.cpu_count() or 1)


def overrides(text: str | None = None) -> dict[str, str]:
    """The operator's settings from ``RB_POSTGRES_SETTINGS`` (``work_mem=64MB,shared_buffers=2GB``)."""
    text = os.environ.get(OVERRIDE_ENV, "") if text is None else text
    found = {}
    for pair in text.split(","):
        if not pair.strip():
            continue
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(f"{OVERRIDE_ENV}: expected name=value, got {pair.strip()!r}")
        found[name.strip()] = value.strip()
    return found


def conf_text(settings: dict[str, str]) -> str:
    lines = [
        "# Written by ReasoningBank before each start of its embedded server: sized to this machine, then",
        f"# {OVERRIDE_ENV}. Edits here are overwritten; use {OVERRIDE_ENV} or ALTER SYSTEM instead.",
    ]
    for name, value in settings.items():
        quoted = value.replace("'", "''")
        lines.append(f"{name} = '{quoted}'")
    return "\n".join(lines) + "\n"


def write_conf(pgdata: Path) -> bool:
    """Write the settings file of the data directory ``pgdata`` and include it from postgresql.conf (an
    initialised data directory); True when something changed. Call it with the server's start lock held."""
    main_conf = pgdata / "postgresql.conf"
    if not main_conf.is_file():
        return False
    text = conf_text({**machine_settings(), **overrides()})
    changed = False
    target = pgdata / CONF_NAME
    if not target.is_file() or target.read_text() != text:
        partial = target.with_suffix(".tmp")
        partial.write_text(text)
        _same_owner(partial, main_conf)
        partial.replace(target)
        changed = True
    current = main_conf.read_text()
    if INCLUDE_LINE not in current.splitlines():
        with main_conf.open("a") as conf:
            conf.write(("" if current.endswith("\n") else "\n") + INCLUDE_LINE + "\n")
        changed = True
    return changed


def _same_owner(path: Path, like: Path) -> None:
    """As root, pgserver runs PostgreSQL as another user: it must be able to read the file."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        stat = like.stat()
        os.chown(path, stat.st_uid, stat.st_gid)
