"""The image's health check (Dockerfile HEALTHCHECK), by role: the role is PID 1's first argument
(docker/entrypoint.sh execs the role's process, keeping its arguments).

  web     GET /readyz answers 200 (database, broker, embedding model loaded, migrations applied)
  mcp     its port accepts a connection
  others  healthy while their process runs (the check only runs inside a running container)

Standard library only: it runs every interval, and must stay cheap."""

import os
import socket
import sys
import urllib.request


def role() -> str:
    try:
        with open("/proc/1/cmdline", "rb") as handle:
            argv = [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
    except OSError:
        return ""
    text = " ".join(argv)
    if "gunicorn" in text:
        return "web"
    if "rb_mcp" in text:
        return "mcp"
    return "other"


def main() -> int:
    which = role()
    try:
        if which == "web":
            url = f"http://127.0.0.1:{os.environ.get('PORT', '8000')}/readyz"
            with urllib.request.urlopen(url, timeout=8) as response:
                return 0 if response.status == 200 else 1
        if which == "mcp":
            with socket.create_connection(("127.0.0.1", int(os.environ.get("RB_MCP_PORT", "8001"))), timeout=5):
                return 0
    except (OSError, ValueError) as exc:
        print(f"unhealthy ({which}): {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
