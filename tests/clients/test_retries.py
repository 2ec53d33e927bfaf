"""Retries proven against a tiny local HTTP server that answers 429 / 503
first, then 200 — real sockets, real waits (short)."""

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import reasoningbank_client as rb
from reasoningbank_client import AsyncClient, Client, RetryPolicy

TOKEN_ANSWER = {
    "prefix": "rb_abc",
    "name": "t",
    "scopes": ["retrieve"],
    "expires_at": None,
    "bank_id": "3f0c9a4e-5b8e-4c1e-9f61-2f4d1c8b7a10",
    "bank": "b",
    "team": "t",
    "retrieval_mode": "items",
    "top_k": 3,
    "rate_limit_per_minute": 600,
}


class Scripted:
    """Answers requests from a script of (status, headers, body); the last entry repeats."""

    def __init__(self, *script):
        self.script = list(script)
        self.requests: list[tuple[float, str, str, bytes]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                owner.requests.append((time.monotonic(), self.command, self.path, self.rfile.read(length)))
                status, headers, body = owner.script.pop(0) if len(owner.script) > 1 else owner.script[0]
                data = json.dumps(body).encode()
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


RATE_LIMITED = (
    429,
    {"Retry-After": "1"},
    {"detail": "Rate limit of 600 requests/minute exceeded.", "code": "rate_limited"},
)
UNAVAILABLE = (503, {}, {"detail": "The embedding model is not available.", "code": "embedding_unavailable"})
QUICK = RetryPolicy(max_attempts=4, backoff_base=0.05, backoff_max=0.1, max_total_delay=5.0)


def test_429_waits_retry_after_then_succeeds():
    with Scripted(RATE_LIMITED, (200, {}, TOKEN_ANSWER)) as server, Client(server.url, "rb_t", retry=QUICK) as client:
        info = client.token()
    assert info.bank == "b"
    (first, *_), (second, *_) = server.requests
    assert second - first >= 0.95  # Retry-After: 1 honoured, not the 0.05 s backoff
    assert [r[2] for r in server.requests] == ["/api/v1/token", "/api/v1/token"]


def test_503_then_200_with_backoff_and_the_same_body():
    with (
        Scripted(
            UNAVAILABLE, UNAVAILABLE, (202, {}, {"id": TOKEN_ANSWER["bank_id"], "status": "received", "url": "/x"})
        ) as server,
        Client(server.url, "rb_t", retry=QUICK) as client,
    ):
        recorded = client.record("task", steps=[{"action": "a"}])
    assert recorded.status == "received"
    bodies = [json.loads(r[3]) for r in server.requests]
    assert len(bodies) == 3
    assert len({b["external_id"] for b in bodies}) == 1  # every retry carries the same external_id
    assert bodies[0]["external_id"] == recorded.external_id


def test_gives_up_after_max_attempts_with_the_typed_error():
    with (
        Scripted(UNAVAILABLE) as server,
        Client(server.url, "rb_t", retry=QUICK) as client,
        pytest.raises(rb.ServerError) as e,
    ):
        client.retrieve("q")
    assert len(server.requests) == 4
    assert (e.value.status, e.value.code) == (503, "embedding_unavailable")
    assert e.value.detail == "The embedding model is not available."


def test_a_retry_after_beyond_the_total_budget_is_not_waited():
    policy = RetryPolicy(max_attempts=5, max_total_delay=0.5)
    with (
        Scripted(RATE_LIMITED) as server,
        Client(server.url, "rb_t", retry=policy) as client,
        pytest.raises(rb.RateLimitError) as e,
    ):
        client.token()
    # The client waits only before another attempt: one request means no wait, and the policy says why.
    assert len(server.requests) == 1 and e.value.retry_after == 1.0 and e.value.code == "rate_limited"
    assert policy.next_delay(1, 0.0, retry_after=1.0) is None


def test_client_errors_are_not_retried():
    bad = (422, {}, {"detail": "query: too long", "code": "validation_error", "errors": []})
    with (
        Scripted(bad) as server,
        Client(server.url, "rb_t", retry=QUICK) as client,
        pytest.raises(rb.ValidationError, match="query: too long"),
    ):
        client.retrieve("q")
    assert len(server.requests) == 1


def test_async_client_retries_too():
    async def call(url):
        async with AsyncClient(url, "rb_t", retry=QUICK) as client:
            return await client.token()

    with Scripted(UNAVAILABLE, RATE_LIMITED, (200, {}, TOKEN_ANSWER)) as server:
        info = asyncio.run(call(server.url))
    assert info.team == "t" and len(server.requests) == 3


def test_backoff_grows_with_jitter_and_a_cap():
    policy = RetryPolicy(backoff_base=1.0, backoff_max=4.0, jitter=True)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        delays = {policy.delay(attempt) for _ in range(20)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered
    assert RetryPolicy(jitter=False).delay(2) == 1.0
    assert RetryPolicy().delay(1, retry_after=7) == 7
