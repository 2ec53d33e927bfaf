"""docker/compose.yaml's `replica` profile, for real: `db` and `db-replica` as podman containers from the
compose file's definitions (environment, user, entrypoint; only the host names become 127.0.0.1:port, as in
tests/containers/topology.py). The replica initialises itself from the primary with pg_basebackup, then
streams: a row written on the primary appears on it, and it refuses writes. (The app reading its reports
from a replica: tests/reasoningbank_site/test_read_replica.py.)"""

from __future__ import annotations

import psycopg
import pytest

from tests.conftest import skip_unless
from tests.containers import images
from tests.containers.topology import DB_PASSWORD, Container, load_compose, podman_available
from tests.harness import free_port, wait_until


def _env_args(env: dict) -> list[str]:
    return [f"--env={key}={value}" for key, value in env.items()]


def _url(port: int) -> str:
    return f"postgres://reasoningbank:{DB_PASSWORD}@127.0.0.1:{port}/reasoningbank"


def _answers(port: int) -> bool:
    try:
        with psycopg.connect(_url(port), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.OperationalError:
        return False


def _sql(port: int, query: str):
    with psycopg.connect(_url(port), connect_timeout=3, autocommit=True) as conn:
        cursor = conn.execute(query)
        return cursor.fetchall() if cursor.description else None


@pytest.fixture
def primary_and_replica():
    why = podman_available()
    skip_unless(not why, f"{why}: the compose replica is not tested")
    images.build_postgres()
    compose = load_compose({"POSTGRES_PASSWORD": DB_PASSWORD, "SECRET_KEY": "not-used-here"})
    db_spec, spec = compose["services"]["db"], compose["services"]["db-replica"]
    assert spec["image"] == db_spec["image"] and spec["profiles"] == ["replica"]
    db_port, replica_port = free_port(), free_port()
    prefix = f"rbct-replica-{db_port}"
    db = Container("db", [*_env_args({**db_spec["environment"], "PGPORT": db_port}), images.POSTGRES], prefix=prefix)
    shell, flag, script = spec["entrypoint"]
    script = script.replace("$$", "$")  # compose turns $$ into $ (the script's own variables)
    replica_env = {**spec["environment"], "PRIMARY_HOST": "127.0.0.1", "PRIMARY_PORT": db_port, "PGPORT": replica_port}
    replica = Container(
        "db-replica",
        [*_env_args(replica_env), "--user", spec["user"], "--entrypoint", shell, images.POSTGRES, flag, script],
        prefix=prefix,
    )
    try:
        db.create_and_start()
        wait_until(lambda: _answers(db_port), timeout=120, what="the primary container to accept connections")
        yield db_port, replica, replica_port
    finally:
        print(replica.log()[-3000:])
        replica.remove()
        db.remove()


def test_the_replica_profile_streams_from_the_primary_and_refuses_writes(primary_and_replica):
    db_port, replica, replica_port = primary_and_replica
    _sql(db_port, "CREATE TABLE runs (task text)")
    _sql(db_port, "INSERT INTO runs VALUES ('before the base backup')")
    replica.create_and_start()
    wait_until(lambda: _answers(replica_port), timeout=180, what="the replica container to accept connections")
    assert _sql(replica_port, "SELECT pg_is_in_recovery()") == [(True,)]
    assert _sql(replica_port, "SELECT task FROM runs") == [("before the base backup",)]

    _sql(db_port, "INSERT INTO runs VALUES ('streamed')")
    wait_until(lambda: _sql(replica_port, "SELECT count(*) FROM runs") == [(2,)], timeout=60, what="the row to stream")
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        _sql(replica_port, "INSERT INTO runs VALUES ('on the replica')")
