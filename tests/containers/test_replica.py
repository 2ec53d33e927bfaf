"""docker/compose.yaml's `replica` profile, for real: `db` and `db-replica` as podman containers from the
compose file's definitions (environment, user, entrypoint; only the host names become 127.0.0.1:port, as in
tests/containers/topology.py). The replica initialises itself from the primary with pg_basebackup, then
streams: a row written on the primary appears on it, and it refuses writes.

Then the app on it: the image's web service (compose's definition) with DATABASE_REPLICA_URL on `db-replica`
reads its reports there and writes only to `db`, shown from the databases' side: with the replica's replay
paused, a run written through web is on the primary and not on the replica, the API's own read finds it and
the dashboard and the export do not; the replica's own statement log has the reports' reads and not one write.
(The same, with the lag and outage fall-backs, in-process: tests/reasoningbank_site/test_read_replica.py.)"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

import httpx
import psycopg
import pytest

from tests import migrated
from tests.conftest import skip_unless
from tests.containers import images
from tests.containers.topology import (
    DB_PASSWORD,
    Container,
    ContainerTopology,
    load_compose,
    podman_available,
    replica_container,
)
from tests.harness import free_port, wait_until
from tests.production.topology import TopologyError


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
    replica = replica_container(compose, db_port, replica_port, prefix)
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


# A reviewer of one bank: their API token (ingest and the exports) and a logged-in browser session.
REPORTS_SETUP = """
from django.contrib.auth import get_user_model
from django.test import Client
from accounts.teams.banks import bank_create
from accounts.teams.services import team_create
from accounts.tokens.services import api_token_create
owner = get_user_model().objects.create_user("ops", "ops@example.com", "ops-password-1234")
bank = bank_create(team=team_create(name="Ops", slug="ops", owner=owner), name="Prod", rate_limit_per_minute=0)
token = api_token_create(bank=bank, name="prod", scopes=["ingest", "retrieve", "review"], created_by=owner).secret
browser = Client()
browser.force_login(owner)
print(bank.public_id, token, browser.cookies["sessionid"].value)
"""
# What PostgreSQL's log_statement=all writes before it runs a statement (simple or extended protocol).
LOGGED_WRITE = re.compile(r"LOG:  (?:statement|execute [^:]*): (?:INSERT|UPDATE|DELETE)\b.*")


@dataclass
class ReplicaTopology(ContainerTopology):
    """db, `db-replica`, redis, migrate and web from the compose file; web's DATABASE_REPLICA_URL is the replica.
    No workers: no run is judged (``record`` labels it on the primary, as the judge would)."""

    pipeline: bool = False
    setup_script: str = REPORTS_SETUP

    def __post_init__(self):
        super().__post_init__()
        self.replica_port = free_port()
        self.replica: Container | None = None
        self.extra_env = {**self.extra_env, "DATABASE_REPLICA_URL": _url(self.replica_port)}
        self.bank = self.session = ""

    def start(self) -> ReplicaTopology:
        super().start()
        self.bank, self.token, self.session = self.token.split()
        return self

    def run_migrate(self) -> None:
        """Migrate (from the session's migrated copy when there is one: nothing left to apply), then the replica
        from a base backup of the migrated primary, before web starts. Every session of the app's role logs its
        statements (a role setting: it reaches the replica with the WAL)."""
        if self.seed:
            migrated.restore(self.seed, self.postgres.url)
        super().run_migrate()
        _sql(self.db_port, "ALTER ROLE reasoningbank IN DATABASE reasoningbank SET log_statement = 'all'")
        with self._timed("replica (base backup) answers"):
            self.replica = self.postgres.start_replica(self.compose, self.replica_port).service

    def record(self, task: str) -> str:
        with self.client() as api:
            answer = api.post("/trajectories", json=self.trajectory_body(task))
        assert answer.status_code == 202, answer.text
        run = answer.json()["id"]
        _sql(self.db_port, f"UPDATE trajectories_trajectory SET verdict = 'success' WHERE public_id = '{run}'")
        return run

    def runs(self, port: int, *runs: str) -> int:
        ids = ", ".join(f"'{run}'" for run in runs)
        return _sql(port, f"SELECT count(*) FROM trajectories_trajectory WHERE public_id IN ({ids})")[0][0]

    def dashboard_total(self) -> int:
        answer = httpx.get(f"{self.base_url}/banks/{self.bank}/", headers={"Cookie": f"sessionid={self.session}"})
        assert answer.status_code == 200, answer.text[:2000]
        return int(re.search(r"All trajectories</strong></td><td[^>]*><strong>(\d+)<", answer.text).group(1))

    def exported(self) -> str:
        with self.client() as api:
            answer = api.get("/export/chat.jsonl", params={"verdict": "all"})
        assert answer.status_code == 200, answer.text
        return answer.text

    def replica_check(self) -> dict:
        answer = httpx.get(f"{self.base_url}/readyz", timeout=30)  # from this host: the checks' details
        assert answer.status_code == 200, answer.text
        return answer.json()["checks"]["replica"]


def test_the_app_reads_its_reports_from_the_compose_replica_and_writes_only_to_the_primary(built, migrated_dump):
    top = ReplicaTopology(prefix="rbct-replica-app", seed=migrated_dump)
    paused = False
    try:
        top.start()
        check = top.replica_check()
        assert check["ok"] and check["detail"]["state"] == "streaming", check
        assert check["detail"]["reports_read"] == "replica", check
        assert "within RB_REPLICA_MAX_LAG_SECONDS=60" in check["detail"]["why"], check  # the compose default

        first = top.record("Buy the cheapest cable with the coupon")
        wait_until(lambda: top.runs(top.replica_port, first) == 1, timeout=60, what="the replica to replay the run")
        assert top.dashboard_total() == 1

        _sql(top.replica_port, "SELECT pg_wal_replay_pause()")
        paused = True
        logged = len(top.replica.log())
        second = top.record("Find the direct flight to Porto")  # through web: on the primary, not on the replica
        assert (top.runs(top.db_port, first, second), top.runs(top.replica_port, first, second)) == (2, 1)
        with top.client() as api:  # the API's own reads are the primary's
            assert api.get(f"/trajectories/{second}").status_code == 200
        # The reports are the replica's: the dashboard page (a logged-in reviewer) and the API's export.
        assert top.dashboard_total() == 1
        exported = top.exported()
        assert "cheapest cable" in exported and "Porto" not in exported, exported
        check = top.replica_check()
        assert (check["detail"]["state"], check["detail"]["reports_read"]) == ("paused", "replica"), check
        # The replica's own log: the reports' reads ran there; no statement the app sent it was a write.
        assert 'FROM "trajectories_trajectory"' in top.replica.log()[logged:]
        assert not LOGGED_WRITE.findall(top.replica.log())
        assert "read replica unavailable" not in top.web.log()

        _sql(top.replica_port, "SELECT pg_wal_replay_resume()")
        paused = False
        wait_until(lambda: top.runs(top.replica_port, second) == 1, timeout=60, what="the replica to replay")
        assert top.dashboard_total() == 2
        assert "Porto" in top.exported()
        # The app's writes are in the primary's log, as the pattern above finds them.
        written = LOGGED_WRITE.findall(top.postgres.service.log())
        assert any('INSERT INTO "trajectories_trajectory"' in line for line in written), written[-5:]
    except TopologyError as exc:
        pytest.fail(str(exc), pytrace=False)
    finally:
        if paused:
            with contextlib.suppress(psycopg.Error):
                _sql(top.replica_port, "SELECT pg_wal_replay_resume()")
        print(f"replica topology timings (s): {top.timings}\n{top.replica.log()[-3000:] if top.replica else ''}")
        top.stop()
