"""The service's MCP endpoint over streamable HTTP (``manage.py rb_mcp``).

The tools are the client package's (``reasoningbank_client.mcp``, the same
code the stdio server runs); each call is forwarded to the REST API with the
``Authorization: Bearer rb_…`` of the HTTP request that carried it, so a
token's bank and scopes apply exactly as on REST. A request without a bearer
token is answered 401 before it reaches MCP. Stateless: any number of
processes can serve it behind a load balancer."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from reasoningbank_client.client import AsyncClient
from reasoningbank_client.errors import AuthenticationError
from reasoningbank_client.retry import RetryPolicy

DEFAULT_API_URL = "http://127.0.0.1:8000"
MCP_PATH = "/mcp"
# A tool call holds its HTTP request open: retry the REST API briefly, not for the client's default 30 s.
TOOL_RETRY = RetryPolicy(max_attempts=3, max_total_delay=5.0)


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


class BearerRequired:
    """ASGI middleware: 401 (JSON, like the REST API) for an HTTP request without a bearer token."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            if bearer_token(headers) is None:
                body = json.dumps(
                    {"detail": "Send an API token as 'Authorization: Bearer rb_…'.", "code": "missing_token"}
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="reasoningbank"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


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
    return BearerRequired(app)
