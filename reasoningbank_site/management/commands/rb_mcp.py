"""Serve the MCP tools over streamable HTTP: ``python manage.py rb_mcp --port 8001``.

Agents connect to ``http://HOST:PORT/mcp`` with their bank token as
``Authorization: Bearer rb_…``; every tool call goes to the REST API at
RB_MCP_API_URL (default http://127.0.0.1:8000) with that token."""

from __future__ import annotations

import os

import uvicorn
from django.core.management.base import BaseCommand

from reasoningbank_site import mcp_http


class Command(BaseCommand):
    help = "Serve the MCP server (streamable HTTP at /mcp), forwarding each request's bearer token to the REST API."
    requires_system_checks = []  # it never touches the database

    def add_arguments(self, parser):
        parser.add_argument("--host", default=os.environ.get("RB_MCP_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("RB_MCP_PORT", "8001")))
        parser.add_argument("--api-url", default="", help="The REST API's base URL (default: RB_MCP_API_URL).")
        parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])

    def handle(self, *args, host: str, port: int, api_url: str, log_level: str, **options):
        api = api_url or mcp_http.api_url()
        app = mcp_http.build_app(api=api, host=host)
        self.stdout.write(f"MCP (streamable HTTP) on http://{host}:{port}{mcp_http.MCP_PATH} → REST API {api}")
        self.stdout.flush()
        # uvicorn logs "Uvicorn running on http://…" once it listens (rb_run waits for that line).
        uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False, lifespan="on")
