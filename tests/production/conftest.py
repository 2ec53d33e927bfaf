"""The production topology, started once for every test of this directory in two forms, and torn down
on every exit path:

- ``processes`` (tests/production/topology.py): PostgreSQL, Redis, gunicorn, Celery workers and beat as
  local processes; normal end, a failed start, Ctrl-C, SIGTERM (turned into KeyboardInterrupt here) and
  even SIGKILL of pytest (the children get SIGKILL from the kernel);
- ``containers`` (tests/containers/topology.py): docker/compose.yaml's services as podman containers on
  the images built from docker/Dockerfile. Without podman it is skipped (and says so); under CI=true a
  missing podman fails instead.

Each test gets it back healthy (anything a previous test left stopped, frozen or killed is started again,
the fake LLM answers normally) and its processes' logs are printed after it, so pytest shows them under a
failure."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from tests.conftest import skip_unless, which
from tests.production.topology import Topology, TopologyError


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _topology(kind: str, request) -> Topology:
    if kind == "processes":
        skip_unless(
            which("redis-server") is not None,
            "redis-server is not installed (apt-get install redis-server): the production topology is not tested",
        )
        return Topology(seed=request.getfixturevalue("migrated_dump"))
    from tests.containers import images
    from tests.containers.topology import ContainerTopology, podman_available

    why = podman_available()
    skip_unless(not why, f"{why}: the compose topology's fault tests against containers are not run")
    try:
        images.build_all()
    except images.BuildError as exc:
        pytest.fail(f"the images did not build: {exc}", pytrace=False)
    return ContainerTopology()


@pytest.fixture(scope="session", params=["processes", "containers"])
def topology(request) -> Iterator[Topology]:
    top = _topology(request.param, request)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        try:
            top.start()
        except TopologyError as exc:
            pytest.fail(f"the production topology ({request.param}) did not start: {exc}", pytrace=False)
        yield top
    finally:
        top.stop()
        signal.signal(signal.SIGTERM, previous)


def heal(top: Topology) -> None:
    """Start again whatever a test left down (as compose's `restart: unless-stopped` would)."""
    if top.redis.service.running():
        top.redis.thaw()
    else:
        top.redis.start()
    if not top.postgres.service.running():
        top.postgres.start()
    for worker in top.worker_services:
        if not worker.running():
            top.restart_worker(worker)
    if top.beat is not None and not top.beat.running():
        top.beat.start()
    if top.web is not None and not top.web.running():
        top.web.start()
        top.wait_web_ready()


@pytest.fixture
def prod(topology: Topology) -> Iterator[Topology]:
    topology.llm.reset()
    heal(topology)
    try:
        yield topology
    finally:
        topology.llm.reset()
        print(topology.logs())  # shown by pytest only under a failing test
