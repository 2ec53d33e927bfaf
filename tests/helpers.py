"""Small helpers several test modules share."""

import json
import urllib.error
import urllib.request
from contextlib import asynccontextmanager
from io import StringIO

from django.core.management import call_command
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


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
