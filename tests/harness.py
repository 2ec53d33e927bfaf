"""The harness tests/ and bench/ share: waiting on a condition, a free
loopback port, a private redis-server. It imports neither pytest nor Django,
so bench/ scripts and the production topology (tests/production/topology.py)
use it outside pytest; tests use it through ``tests.helpers.wait_for`` (a
timeout fails the test) and the worker fixtures (tests/worker.py)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class TimedOut(RuntimeError):
    """The condition ``wait_until`` waited on did not come true in time."""


def wait_until(
    predicate: Callable[[], object], *, timeout: float = 60.0, interval: float = 0.25, what: str = "condition"
):
    """Poll ``predicate`` until it returns something truthy; return that, or raise TimedOut after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimedOut(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_server_start(binary: str, workdir: Path, *, log: Path | None = None) -> tuple[subprocess.Popen, str]:
    """A private redis-server (no persistence) on a free loopback port, its files in ``workdir``; returns (its
    process, its URL) once it answers PING. Raises TimedOut, with its log, if it exits or never answers; the
    caller stops it."""
    import redis

    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir), "--save", ""]
    argv += ["--appendonly", "no", *(["--logfile", str(log)] if log else [])]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=5)

    def answers() -> bool:
        if proc.poll() is not None:
            said = log.read_text() if log and log.exists() else ""
            raise TimedOut(f"redis-server exited with code {proc.returncode}:\n{said}")
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    try:
        wait_until(answers, timeout=60, interval=0.1, what="redis-server to answer PING")
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, f"redis://127.0.0.1:{port}/0"
