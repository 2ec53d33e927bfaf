"""Start `make run`'s stack as `make run` starts it: ``manage.py rb_run`` in a
subprocess, with its own data directory and ports, and nothing of the test
suite's database or broker in its environment."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings

from tests.worker import wait_for

# The suite's own database, broker and LLM: rb_run must use its embedded ones.
DROP = {
    "DATABASE_URL",
    "RB_DATABASE_NAME",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "RB_BROKER_DIR",
    "RB_LLM_BASE_URL",
    "OPENAI_API_KEY",
}


@dataclass
class Stack:
    data_dir: Path
    port: int
    mcp_port: int
    env: dict[str, str]

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    def token(self) -> str:
        return (self.data_dir / "demo-token.txt").read_text().strip()


def stack_env(data_dir: Path, **extra: str) -> Stack:
    """A data directory and two free loopback ports for one rb_run."""
    with socket.socket() as sock, socket.socket() as mcp_sock:
        sock.bind(("127.0.0.1", 0))
        mcp_sock.bind(("127.0.0.1", 0))
        port, mcp_port = sock.getsockname()[1], mcp_sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in DROP}
    env.update(RB_DATA_DIR=str(data_dir), RB_PORT=str(port), RB_MCP_PORT=str(mcp_port), PYTHONUNBUFFERED="1", **extra)
    return Stack(data_dir=data_dir, port=port, mcp_port=mcp_port, env=env)


def rb_run_start(stack: Stack, log: Path) -> subprocess.Popen:
    """Start rb_run; return once its banner is printed (fail with its log if it exits first)."""
    proc = subprocess.Popen(
        [sys.executable, str(settings.BASE_DIR / "manage.py"), "rb_run"],
        env=stack.env,
        cwd=settings.BASE_DIR,
        stdin=subprocess.DEVNULL,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )

    def banner():
        if proc.poll() is not None:
            pytest.fail(f"rb_run exited with {proc.returncode}:\n{log.read_text()}")
        return "Press Ctrl-C" in log.read_text()

    try:
        wait_for(banner, timeout=240, interval=0.5, what="rb_run's banner")
    except BaseException:
        proc.kill()
        raise
    return proc


def rb_run_stop(proc: subprocess.Popen, log: Path) -> None:
    """Ctrl-C, as a user stops it; fail with its log if it does not stop."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(90)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"rb_run did not stop on SIGINT:\n{log.read_text()}")


def http_json(method: str, url: str, token: str, body: dict | None = None, timeout: float = 30) -> tuple[int, dict]:
    """One request on a new connection (as curl sends it); (status, JSON answer)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raw = exc.read() or b"{}"
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, {"body": raw[:300].decode(errors="replace")}
