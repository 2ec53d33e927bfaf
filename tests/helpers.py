"""Small helpers several test modules share."""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import asynccontextmanager
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.harness import TimedOut, free_port, wait_until


def wait_for(
    predicate: Callable[[], object], *, timeout: float = 60.0, interval: float = 0.25, what: str = "condition"
):
    """Poll ``predicate`` until it returns something truthy; return that, or fail the test after ``timeout``
    seconds (``tests.harness.wait_until``, whose timeout is an exception, for code that runs outside pytest)."""
    try:
        return wait_until(predicate, timeout=timeout, interval=interval, what=what)
    except TimedOut as exc:
        pytest.fail(str(exc))


def wait_until_another_waits_on_my_lock(*, timeout: float = 30.0) -> None:
    """From a transaction holding a row or table lock: wait until another
    backend's statement is blocked on a lock this connection holds (its
    ``pg_locks`` row not granted, this backend among its blockers), so what
    the caller does next (commit) happens while that statement waits.
    ``pg_locks`` is read live, unlike ``pg_stat_activity``'s per-transaction snapshot."""
    from django.db import connection

    def blocked() -> bool:
        with connection.cursor() as cur:
            cur.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted"
                " AND pg_backend_pid() = ANY(pg_blocking_pids(pid)))"
            )
            return cur.fetchone()[0]

    wait_for(blocked, timeout=timeout, interval=0.01, what="another backend to wait on this one's lock")


def run(*args, **options) -> tuple[str, str]:
    """Call a management command; return its (stdout, stderr)."""
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def retrieve(client, token: str, query: str = "anything"):
    """POST /api/v1/retrieve with ``token`` as the bearer."""
    return client.post(
        "/api/v1/retrieve", {"query": query}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


ROOT = Path(__file__).resolve().parent.parent


def gunicorn_serving(*options: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """A real gunicorn serving the app against the test database on a free
    port, with gunicorn's ``options`` and ``env`` over this environment;
    returns (its process, its base URL) once /healthz answers. The caller
    stops it."""
    from django.db import connection

    port = free_port()
    env = {
        **os.environ,
        "RB_DATABASE_NAME": connection.settings_dict["NAME"],
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        **(env or {}),
    }
    argv = [sys.executable, "-m", "gunicorn", "reasoningbank_site.wsgi", *options, "-b", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"gunicorn exited with code {proc.returncode} before it answered")
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=5).read()
            return True
        except OSError:  # not listening yet, or busy starting
            return False

    try:
        wait_for(answers, timeout=120, what="gunicorn to answer /healthz")
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, base


def post_over_http(url: str, token: str, body: dict) -> tuple[int, dict]:
    """POST ``body`` as JSON to a real server's ``url`` with ``token`` as the bearer; (status, JSON answer)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


@asynccontextmanager
async def http_session(url: str, token: str):
    """An initialised MCP client session over streamable HTTP with ``token`` as the bearer."""
    import httpx2

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
