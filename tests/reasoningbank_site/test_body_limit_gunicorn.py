"""A body over the API's limit, sent to the web server as `make run` starts it
(gunicorn, rb_run's own arguments): every common client gets the 413 JSON
answer, not a broken pipe or a connection reset, whether it keeps the
connection open or asks to close it; and the project's clients send it once
(a 413 is never retried)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import httpx
import pytest
import requests
from django.conf import settings

from reasoningbank_client import AsyncClient, Client, PayloadTooLargeError
from reasoningbank_site.supervisor import web_argv
from tests.clients.test_typescript import PACKAGE, compiled  # noqa: F401 (the compiled TypeScript client)
from tests.conftest import skip_unless, which
from tests.helpers import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="gunicorn as `make run` starts it")

BODY_BYTES = 30 * 1024 * 1024
TOKEN = "rb_" + "0" * 40  # the limit is checked before the token: no bank is needed


class Web:
    def __init__(self, port: int, log: Path):
        self.port, self.log = port, log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests_received(self, user_agent: str) -> int:
        """How many POSTs to the trajectories endpoint the access log shows from ``user_agent``, each
        answered 413. Gunicorn writes a request's line right after its answer, so a marker request sent
        now, after the client had every answer it waited for, is logged after them: its line is waited for."""
        marker = f"log-marker-{uuid.uuid4().hex}"
        request = urllib.request.Request(f"{self.url}/healthz", headers={"User-Agent": marker})
        urllib.request.urlopen(request, timeout=30).read()
        wait_for(lambda: f'"{marker}"' in self.log.read_text(), timeout=30, interval=0.05, what="the marker's line")
        lines = self.log.read_text().splitlines()
        mine = [line for line in lines if f'"{user_agent}"' in line and "POST /api/v1/trajectories" in line]
        assert all('" 413 ' in line for line in mine), mine
        return len(mine)


@pytest.fixture(scope="module")
def web(tmp_path_factory) -> Web:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path_factory.mktemp("gunicorn") / "web.log"
    env = {**os.environ, "RB_EMBEDDING_PRELOAD": "0", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        web_argv("127.0.0.1", port), env=env, cwd=settings.BASE_DIR, stdout=log.open("w"), stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            pytest.fail(f"gunicorn exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"gunicorn did not listen within 120 s:\n{log.read_text()}")
            time.sleep(0.2)
    yield Web(port, log)
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def oversized_body() -> bytes:
    return json.dumps({"task": "x" * BODY_BYTES, "steps": [{"action": "a", "observation": "b"}]}).encode()


HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


def assert_payload_too_large(status: int, body: bytes) -> None:
    assert status == 413, body[:300]
    answer = json.loads(body)
    assert answer["code"] == "payload_too_large" and "RB_API_MAX_BODY_BYTES" in answer["detail"]


def test_urllib_which_asks_to_close_the_connection_gets_the_413(web):
    request = urllib.request.Request(f"{web.url}/api/v1/trajectories", data=oversized_body(), headers=HEADERS)
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=60)
    assert_payload_too_large(answered.value.code, answered.value.read())


@pytest.mark.parametrize("connection", ["keep-alive", "close"])
def test_httpx_gets_the_413(web, connection):
    with httpx.Client(timeout=60) as client:
        response = client.post(
            f"{web.url}/api/v1/trajectories", content=oversized_body(), headers={**HEADERS, "Connection": connection}
        )
    assert_payload_too_large(response.status_code, response.content)


@pytest.mark.parametrize("connection", ["keep-alive", "close"])
def test_requests_gets_the_413(web, connection):
    with requests.Session() as session:
        response = session.post(
            f"{web.url}/api/v1/trajectories",
            data=oversized_body(),
            headers={**HEADERS, "Connection": connection},
            timeout=60,
        )
    assert_payload_too_large(response.status_code, response.content)


def test_the_python_client_gets_the_413_once(web):
    agent = "python-client-sync"
    with (
        Client(url=web.url, token=TOKEN, headers={"User-Agent": agent}) as client,
        pytest.raises(PayloadTooLargeError) as refused,
    ):
        client.record("x" * BODY_BYTES, steps=[{"action": "a", "observation": "b"}])
    assert refused.value.status == 413 and refused.value.code == "payload_too_large"
    assert "RB_API_MAX_BODY_BYTES" in refused.value.detail
    assert web.requests_received(agent) == 1


def test_the_async_python_client_gets_the_413_once(web):
    async def record():
        async with AsyncClient(url=web.url, token=TOKEN, headers={"User-Agent": "python-client-async"}) as client:
            await client.record("x" * BODY_BYTES, steps=[{"action": "a", "observation": "b"}])

    with pytest.raises(PayloadTooLargeError) as refused:
        asyncio.run(record())
    assert refused.value.status == 413 and refused.value.code == "payload_too_large"
    assert web.requests_received("python-client-async") == 1


NODE_FETCH = """
const body = JSON.stringify({ task: "x".repeat(%d), steps: [{ action: "a", observation: "b" }] });
const response = await fetch(process.argv[2], {
  method: "POST", body, headers: { Authorization: "Bearer %s", "Content-Type": "application/json" },
});
console.log(JSON.stringify({ status: response.status, body: await response.text() }));
"""


def test_node_fetch_which_the_typescript_client_uses_gets_the_413(web, tmp_path):
    node = which("node")
    skip_unless(node is not None, "node is not installed: fetch against gunicorn is not tested")
    script = tmp_path / "post.mjs"
    script.write_text(NODE_FETCH % (BODY_BYTES, TOKEN))
    done = subprocess.run(
        [node, str(script), f"{web.url}/api/v1/trajectories"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert_payload_too_large(answer["status"], answer["body"].encode())


TYPESCRIPT_CLIENT = """
import { Client } from "%s";
const client = new Client({ url: process.argv[2], token: "%s", headers: { "User-Agent": "typescript-client" } });
try {
  await client.record("x".repeat(%d), { steps: [{ action: "a", observation: "b" }] });
  console.log(JSON.stringify({ status: 0 }));
} catch (error) {
  console.log(JSON.stringify({ name: error.name, status: error.status, code: error.code, message: error.message }));
}
"""


def test_the_typescript_client_gets_the_413_once(web, compiled, tmp_path):
    script = tmp_path / "record.mjs"
    script.write_text(TYPESCRIPT_CLIENT % ((PACKAGE / "dist" / "index.js").as_uri(), TOKEN, BODY_BYTES))
    done = subprocess.run([which("node"), str(script), web.url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    error = json.loads(done.stdout)
    assert error["status"] == 413 and error["code"] == "payload_too_large", error
    assert error["name"] == "PayloadTooLargeError" and "RB_API_MAX_BODY_BYTES" in error["message"]
    assert web.requests_received("typescript-client") == 1
