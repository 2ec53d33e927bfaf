"""A REAL Celery worker for tests: a `celery -A reasoningbank_site worker`
subprocess bound to pytest-django's test database and to a broker of its own.

Use it from a test module with::

    # every fixture the worker needs must be importable by name from the test module
    from tests.worker import celery_broker, celery_worker, celery_worker_env, wait_for  # noqa: F401

    @pytest.mark.worker
    @pytest.mark.django_db(transaction=True)
    def test_something(celery_worker): ...

The fixture is parametrized over brokers: ``embedded`` (the embedded Valkey
server `make run` uses, in a fresh tmp dir; always available) and ``redis`` (a
private redis-server on a free loopback port, as production runs one; skipped
when redis-server is not installed, a failure under CI=true). Override ``celery_worker_env`` to pass extra environment (e.g. a fake
LLM's RB_LLM_BASE_URL) to the worker. The worker's log is printed at teardown,
so pytest shows it under a failing test.

``celery_worker`` is one worker consuming every queue; ``celery_workers``
starts one per role of reasoningbank_site/workers.py (the pipeline's, the
webhooks', the bulk work's), each on its own queues, as production runs them."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from reasoningbank_site import embedded, workers
from reasoningbank_site.celery import app as celery_app
from tests.conftest import skip_unless, which
from tests.harness import TimedOut, redis_server_start
from tests.helpers import wait_for

READY_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0


@dataclass
class Broker:
    kind: str
    url: str
    transport_options: dict
    env: dict[str, str]  # what the worker needs to reach the same broker
    process: subprocess.Popen | None = None  # the private redis-server (tests freeze it with SIGSTOP)


@dataclass
class RunningWorker:
    broker: Broker
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def _redis_broker(tmp: Path) -> Iterator[Broker]:
    binary = which("redis-server")
    skip_unless(
        binary is not None, "redis-server is not installed (apt-get install redis-server): Redis broker not tested"
    )
    try:
        proc, url = redis_server_start(binary, tmp, log=tmp / "redis.log")
    except TimedOut as exc:
        pytest.fail(str(exc))
    try:
        options = {**settings.CELERY_BROKER_TRANSPORT_OPTIONS, "visibility_timeout": 3600}
        yield Broker("redis", url, options, {"CELERY_BROKER_URL": url}, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _embedded_broker(tmp: Path) -> Iterator[Broker]:
    """The embedded broker (reasoningbank_site.embedded) in ``tmp``: the worker attaches to the same server
    through RB_BROKER_DIR, as `make run`'s processes do through RB_DATA_DIR. Stopped when the test is done."""
    url = embedded.broker_url(tmp)
    try:
        yield Broker("embedded", url, dict(settings.CELERY_BROKER_TRANSPORT_OPTIONS), {"RB_BROKER_DIR": str(tmp)})
    finally:
        embedded.broker_detach(tmp)


def point_app_at(url: str, transport_options: dict) -> None:
    """Make this (test) process publish to ``url``: drop the connection and
    producer pools cached for the old broker, as Celery itself does after a
    fork. kombu keeps producer pools in a process-wide registry keyed by
    connection, so it is reset too — else switching back to the first broker
    would hand out its closed pool ("Acquire on closed pool")."""
    from kombu import pools

    pools.reset()
    celery_app.conf.broker_url = url
    celery_app.conf.broker_transport_options = transport_options
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture
def celery_worker_env() -> dict[str, str]:
    """Extra environment for the worker process; override in a test module."""
    return {}


def fake_llm_worker_env(fake_llm, **extra: str) -> dict[str, str]:
    """The worker's environment for talking to the fake LLM server (tests/fake_llm.py), plus ``extra``:
    what a module's ``celery_worker_env`` override returns."""
    return {
        "RB_LLM_BASE_URL": fake_llm.base_url,
        "RB_LLM_MODEL": "fake-model",
        "OPENAI_API_KEY": "",
        "RB_LLM_TIMEOUT": "10",
        **extra,
    }


@pytest.fixture(params=["embedded", "redis"])
def celery_broker(request, tmp_path_factory) -> Iterator[Broker]:
    yield from _broker_for(request.param, tmp_path_factory)


@pytest.fixture
def redis_broker(tmp_path_factory) -> Iterator[Broker]:
    """A private redis-server this process publishes to (``process`` is its server)."""
    yield from _broker_for("redis", tmp_path_factory)


def _broker_for(kind: str, tmp_path_factory) -> Iterator[Broker]:
    tmp = tmp_path_factory.mktemp(f"broker-{kind}")
    source = _redis_broker if kind == "redis" else _embedded_broker
    gen = source(tmp)
    broker = next(gen)
    old = (celery_app.conf.broker_url, dict(celery_app.conf.broker_transport_options or {}))
    point_app_at(broker.url, broker.transport_options)
    try:
        yield broker
    finally:
        point_app_at(*old)
        gen.close()


def _worker_env(celery_broker: Broker, celery_worker_env: dict[str, str]) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CELERY_BROKER_URL", "REDIS_URL", "RB_BROKER_DIR")
    }
    env.update(
        {
            "RB_DATABASE_NAME": connection.settings_dict["NAME"],
            "RB_DATA_DIR": str(settings.DATA_DIR),
            "DJANGO_SETTINGS_MODULE": "reasoningbank_site.settings",
            "PYTHONUNBUFFERED": "1",
            **celery_broker.env,
            **celery_worker_env,
        }
    )
    return env


def _start(argv: list[str], env: dict[str, str], broker: Broker, log_path: Path) -> RunningWorker:
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen(
            argv, cwd=settings.BASE_DIR, env=env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT
        )
    return RunningWorker(broker, proc, log_path)


def _wait_ready(worker: RunningWorker) -> None:
    def ready() -> bool:
        if worker.process.poll() is not None:
            pytest.fail(f"the worker exited with code {worker.process.returncode} before it was ready:\n{worker.log()}")
        return " ready." in worker.log()

    wait_for(ready, timeout=READY_TIMEOUT, what=f"the Celery worker ({worker.broker.kind} broker) to be ready")


def _stop(worker: RunningWorker, name: str = "celery worker") -> None:
    proc = worker.process
    if proc.poll() is None:
        # The test is over and nothing the worker would still do is checked: kill it. A warm shutdown
        # (SIGTERM) waited for the broker poll and Celery's shutdown steps, 4-7 s per test. PostgreSQL
        # ends the killed worker's session (and rolls back any open transaction) as its socket closes.
        proc.kill()
        proc.wait(STOP_TIMEOUT)
    # Shown by pytest only when the test failed.
    print(f"----- {name} log ({worker.broker.kind} broker, exit code {proc.returncode}) -----")
    print(worker.log())


@pytest.fixture
def celery_worker(transactional_db, celery_broker: Broker, celery_worker_env, tmp_path) -> Iterator[RunningWorker]:
    """A running worker (solo pool, no beat) that reads pytest's test database
    and consumes every queue (no -Q). Tests using it must be
    ``@pytest.mark.django_db(transaction=True)`` so the rows they write are
    committed and visible to the worker."""
    with worker_running(celery_broker, celery_worker_env, tmp_path / "worker.log") as worker:
        yield worker


@contextlib.contextmanager
def worker_running(broker: Broker, extra_env: dict[str, str], log_path: Path) -> Iterator[RunningWorker]:
    """Start a worker on ``broker`` (what the ``celery_worker`` fixture runs; a test that kills one starts
    the next with this), wait until it is ready, and kill it when the block ends."""
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "reasoningbank_site",
        "worker",
        "--pool",
        "solo",
        "--concurrency",
        "1",
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--hostname",
        f"pytest-{uuid.uuid4().hex[:8]}@%h",
    ]
    worker = _start(argv, _worker_env(broker, extra_env), broker, log_path)
    try:
        _wait_ready(worker)
        yield worker
    finally:
        _stop(worker)


@pytest.fixture
def celery_worker_roles() -> tuple[workers.WorkerRole, ...]:
    """Which of the worker roles ``celery_workers`` starts; override in a test module."""
    return workers.ROLES


@pytest.fixture
def celery_workers(
    transactional_db, celery_broker: Broker, celery_worker_env, celery_worker_roles, tmp_path
) -> Iterator[dict[str, RunningWorker]]:
    """One running worker per role of reasoningbank_site/workers.py, by role name, as production runs
    them: each consumes its role's queues with its role's pool (a prefork role runs solo, one task at
    a time, on these 2-core machines)."""
    env = _worker_env(celery_broker, celery_worker_env)
    running: dict[str, RunningWorker] = {}
    try:
        for role in celery_worker_roles:
            pool = "solo" if role.pool == "prefork" else role.pool
            argv = workers.worker_argv(
                role, loglevel="INFO", hostname=f"pytest-{role.name}-{uuid.uuid4().hex[:8]}@%h", pool=pool
            )
            argv += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
            running[role.name] = _start(argv, env, celery_broker, tmp_path / f"{role.name}.log")
        for worker in running.values():
            _wait_ready(worker)
        yield running
    finally:
        for name, worker in running.items():
            _stop(worker, name)
