"""The service's MCP endpoint over streamable HTTP (``manage.py rb_mcp``).

The tools are the client package's (``reasoningbank_client.mcp``, the same
code the stdio server runs); each call is forwarded to the REST API with the
``Authorization: Bearer rb_…`` of the HTTP request that carried it, so a
token's bank and scopes apply exactly as on REST. A request without a bearer
token, or with one the REST API refuses (``GET /token``), is answered with
the REST API's JSON error (401, 403, 429) before it reaches MCP. Stateless:
any number of processes can serve it behind a load balancer."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping

from reasoningbank_client.async_client import AsyncClient
from reasoningbank_client.errors import APIError, AuthenticationError, RateLimitError, RBError
from reasoningbank_client.retry import RetryPolicy

DEFAULT_API_URL = "http://127.0.0.1:8000"
MCP_PATH = "/mcp"
# A tool call holds its HTTP request open: retry the REST API briefly, not for the client's default 30 s.
TOOL_RETRY = RetryPolicy(max_attempts=3, max_total_delay=5.0)
# A token the REST API accepted is not asked about again for this long: a tool call is checked by the REST
# API anyway, and asking on every MCP request would spend the bank's rate limit twice per tool call.
TOKEN_CHECK_TTL = 30.0
TOKEN_CHECK_MAX = 10_000


def api_url() -> str:
    """Where the REST API is: setting RB_MCP_API_URL, else the environment, else the local dev server."""
    from django.conf import settings

    return getattr(settings, "RB_MCP_API_URL", "") or os.environ.get("RB_MCP_API_URL", "") or DEFAULT_API_URL


def bearer_token(headers: Mapping[str, str] | None) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, or None."""
    if not headers:
        return None
    value = headers.get("authorization") or headers.get("Authorization") or ""
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


async def _send_json(send, status: int, body: dict, headers: list[tuple[bytes, bytes]] = ()) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


TokenCheck = Callable[[str], Awaitable[None]]


def rest_token_check(api: str) -> TokenCheck:
    """Ask the REST API (``GET /token``) whether it accepts a token; raise its RBError if not."""

    async def check(token: str) -> None:
        async with AsyncClient(api, token, agent="mcp", retry=TOOL_RETRY) as client:
            await client.token()

    return check


class BearerRequired:
    """ASGI middleware: answer an HTTP request whose bearer token is missing or
    refused by the REST API with the REST API's JSON error (401 with
    ``WWW-Authenticate``, 403, 429 with ``Retry-After``); 503 when the REST API
    cannot be asked. Tokens it accepted are remembered (by hash) for
    TOKEN_CHECK_TTL seconds."""

    def __init__(self, app, check: TokenCheck):
        self.app = app
        self.check = check
        self._accepted: dict[str, float] = {}  # sha256 of the token → when it stops being trusted

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            refusal = await self._refusal(bearer_token(headers))
            if refusal is not None:
                await _send_json(send, *refusal)
                return
        await self.app(scope, receive, send)

    async def _refusal(self, token: str | None) -> tuple[int, dict, list] | None:
        challenge = [(b"www-authenticate", b'Bearer realm="reasoningbank"')]
        if token is None:
            body = {"detail": "Send an API token as 'Authorization: Bearer rb_…'.", "code": "missing_token"}
            return 401, body, challenge
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        if self._accepted.get(key, 0.0) > now:
            return None
        try:
            await self.check(token)
        except RBError as exc:
            self._accepted.pop(key, None)
            if isinstance(exc, APIError) and exc.status in (401, 403, 429):
                headers = challenge if exc.status == 401 else []
                if isinstance(exc, RateLimitError) and exc.retry_after is not None:
                    headers = [(b"retry-after", str(int(exc.retry_after)).encode())]
                return exc.status, {"detail": exc.detail, "code": exc.code}, headers
            body = {"detail": f"Could not check the token with the REST API: {exc.detail}", "code": "api_unavailable"}
            return 503, body, []
        if len(self._accepted) >= TOKEN_CHECK_MAX:
            self._accepted.clear()
        self._accepted[key] = now + TOKEN_CHECK_TTL
        return None


def build_app(*, api: str | None = None, host: str = "127.0.0.1", max_body_bytes: int | None = None):
    """The ASGI app serving MCP at ``/mcp``. ``host`` is the address it binds: on a loopback
    address the SDK also checks Host/Origin headers against DNS rebinding."""
    from django.conf import settings

    from reasoningbank_client.mcp import build_server

    base = api or api_url()

    def client_for(ctx) -> AsyncClient:
        token = bearer_token(ctx.headers)
        if token is None:
            raise AuthenticationError("This request carries no bearer token.", code="missing_token", status=401)
        return AsyncClient(base, token, agent="mcp", retry=TOOL_RETRY)

    server = build_server(client_for)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        host=host,
        # Room for the largest body the REST API accepts, plus the JSON-RPC envelope.
        max_request_body_size=(max_body_bytes or settings.RB_API_MAX_BODY_BYTES) + 64 * 1024,
    )
    return BearerRequired(app, rest_token_check(base))
