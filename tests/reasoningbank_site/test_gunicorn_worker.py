"""The web server's worker class (reasoningbank_site/gunicorn_worker.py) in a
real gunicorn: a worker whose threads are all busy leaves new connections to
a worker with a free thread, so agents' kept-alive connections spread over the
workers; once every thread is busy a new connection waits in the backlog, and
every request is still answered.

A request holds its thread deterministically here: its headers are sent and
half of its body, so the thread waits for the rest."""

import http.client
import json
import socket
import time

import psutil
import pytest

from tests import factories
from tests.helpers import gunicorn_serving
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_CLASS = "reasoningbank_site.gunicorn_worker.BalancedThreadWorker"


@pytest.fixture
def two_workers_two_threads():
    proc, base = gunicorn_serving(
        "-w", "2", "--threads", "2", "--worker-class", WORKER_CLASS, env={"RB_EMBEDDING_PRELOAD": "0"}
    )
    try:
        yield proc, int(base.rsplit(":", 1)[1])
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _held(proc, port: int) -> list[int]:
    """The connections each worker has accepted on ``port``, most first."""
    counts = []
    for worker in psutil.Process(proc.pid).children():
        held = worker.net_connections(kind="tcp")
        counts.append(sum(1 for c in held if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == port))
    return sorted(counts, reverse=True)


def _half_sent(port: int, token: str, body: bytes) -> socket.socket:
    """A connection that sent a trajectory's POST but only half its body."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    head = (
        f"POST /api/v1/trajectories HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head + body[: len(body) // 2])
    return sock


def _wait_held(proc, port: int, total: int) -> list[int]:
    deadline = time.monotonic() + 90  # the second worker may still be starting
    while sum(held := _held(proc, port)) < total:
        assert time.monotonic() < deadline, f"the workers accepted {held}, expected {total} connections"
        time.sleep(0.1)
    return held


def test_busy_workers_leave_new_connections_to_free_ones(two_workers_two_threads, bank):
    proc, port = two_workers_two_threads
    token = factories.make_token(bank, scopes=["ingest"])
    bodies = [
        json.dumps(
            {
                "task": f"Book a table for {n + 2}",
                "steps": [{"thought": "call", "observation": "ok"}],
                "final_answer": "booked",
            }
        ).encode()
        for n in range(5)
    ]

    first = [_half_sent(port, token, body) for body in bodies[:4]]
    # Two threads each: a worker busy with two requests accepts no third, the other worker does.
    assert _wait_held(proc, port, 4) == [2, 2]

    fifth = _half_sent(port, token, bodies[4])
    time.sleep(1.0)
    assert _held(proc, port) == [2, 2]  # every thread is busy: the fifth waits in the backlog

    answers = []
    for sock, body in zip([*first, fifth], bodies, strict=True):
        sock.sendall(body[len(body) // 2 :])
    for sock in [*first, fifth]:
        response = http.client.HTTPResponse(sock)
        response.begin()
        answers.append((response.status, json.loads(response.read())))
        sock.close()
    assert [status for status, _ in answers] == [202] * 5, answers
    stored = set(Trajectory.objects.filter(bank=bank).values_list("task", flat=True))
    assert stored == {f"Book a table for {n + 2}" for n in range(5)}
