"""The production topology (tests/production/topology.py), started once for
every test of this directory and torn down on every exit path: normal end,
a failed start, Ctrl-C, SIGTERM (turned into KeyboardInterrupt here) and even
SIGKILL of pytest (the children get SIGKILL from the kernel).

Each test gets it back healthy (anything a previous test left stopped,
frozen or killed is started again, the fake LLM answers normally) and its
processes' logs are printed after it, so pytest shows them under a failure."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from tests.conftest import skip_unless, which
from tests.production.topology import Topology, TopologyError


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def topology() -> Iterator[Topology]:
    skip_unless(
        which("redis-server") is not None,
        "redis-server is not installed (apt-get install redis-server): the production topology is not tested",
    )
    previous = signal.signal(signal.SIGTERM, _interrupt)
    top = Topology()
    try:
        try:
            top.start()
        except TopologyError as exc:
            pytest.fail(f"the production topology did not start: {exc}", pytrace=False)
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
