"""The one-command local stack (`make run`): embedded PostgreSQL and the
embedded broker (a Valkey server; both started by settings when DATABASE_URL
and REDIS_URL are unset), migrations, demo data, the Celery workers (the
pipeline's, the webhook deliveries' and the bulk work's:
reasoningbank_site/workers.py) and beat, the web server and the MCP server --
supervised, and all stopped together on Ctrl-C.

The web server is gunicorn with its threaded worker, as production runs it
(docker/entrypoint.sh): WEB_CONCURRENCY processes x WEB_THREADS threads, so
the web's database connections are bounded however many clients connect.
Children run in their own session so a terminal Ctrl-C reaches only this
process, which then stops each child the way that child shuts down cleanly
(celery and gunicorn: SIGTERM, a warm shutdown that finishes the requests and
tasks at hand; gunicorn's workers exit through their atexit handlers, which
detach them from the embedded PostgreSQL). A child that dies is restarted with
a back-off (1 s, doubling to 30 s; five quick deaths in a row stop the
stack); an embedded PostgreSQL server that dies is started again, and the
children reconnect to it. If this process is killed outright, each child gets
its stop signal from the kernel (PR_SET_PDEATHSIG); the PostgreSQL server
(not a child: pg_ctl detaches it) is stopped by the last process to detach
if it can, else left running and adopted by the next start."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import psutil
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memories.items.models import ItemStatus, MemoryItem
from reasoningbank_site import embedded, workers
from reasoningbank_site.demo import ADMIN_PASSWORD, ADMIN_USERNAME, DEMO, DEMO_QUERY, demo_token_path
from reasoningbank_site.metrics import multiprocess_dir_prepare
from reasoningbank_site.supervisor import Child, beat_argv, port_is_free, say, web_argv, worker_argv, worker_log_level
from trajectories.pipeline import demo_llm
from trajectories.pipeline.llm import llm_configured, llm_demo_wanted

READY_TIMEOUT = 120.0
STOP_TIMEOUT = 20.0
EMBED_WAIT = 120.0
RESTART_BACKOFF = 1.0  # seconds before the first restart of a dead child; doubles per quick death
RESTART_BACKOFF_MAX = 30.0
STABLE_AFTER = 60.0  # a child that ran this long before dying starts its back-off afresh
MAX_QUICK_DEATHS = 5  # in a row, each within STABLE_AFTER of its start: give up and stop the stack
POSTGRES_CHECK_EVERY = 1.0
PG_RETRY = 0.5  # seconds before trying again to start a dead PostgreSQL; doubles per failure, up to 30 s


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
        self.demo_llm_url = ""
        self.data_dir = data_dir
        self.pg_check_at = 0.0
        self.broker_check_at = 0.0
        self.pg_down_since: float | None = None
        self.pg_backoff = PG_RETRY
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, self._on_signal)

        db = settings.DATABASES["default"]
        where = (
            f"embedded PostgreSQL in {data_dir / 'pg'}"
            if settings.EMBEDDED_POSTGRES
            else f"database {db.get('NAME')} on {db.get('HOST')}"
        )
        self.stdout.write(f"Database: {where}")
        if settings.EMBEDDED_POSTGRES:
            self._report_adopted_postgres()
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
                exit_code = self._wait_ready()
            if not self.stopping and not exit_code and not options["no_demo"]:
                self._wait_demo_embeddings()
            if not self.stopping and not exit_code:
                self._banner(host, port, mcp_port)
                exit_code = self._supervise()
        finally:
            self._stop_children()
        if exit_code:
            sys.exit(exit_code)
        self.stdout.write("Stopped.")

    # --- children -------------------------------------------------------------------

    def _start_children(self, host: str, port: int, mcp_port: int, data_dir: Path) -> None:
        env = {**os.environ, "RB_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
        env.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank_site.settings")
        env.update(multiprocess_dir_prepare(data_dir))  # /metrics sums the web's and the worker's metrics
        self.child_env = env
        base = Path(settings.BASE_DIR)
        # The pipeline's worker, the webhook deliveries' and the bulk work's, each on its queues; beat on its own.
        worker, *queue_workers = [
            Child(
                name=role.name,
                argv=worker_argv(data_dir, role=role),
                stop_signal=signal.SIGTERM,
                ready_marker=" ready.",
            )
            for role in workers.ROLES
        ]
        # The banner's last line ("maxinterval"); beat logs nothing more at WARNING.
        beat = Child(name="beat", argv=beat_argv(data_dir), stop_signal=signal.SIGTERM, ready_marker="maxinterval ->")
        web = Child(
            name="web",
            argv=web_argv(host, port),
            stop_signal=signal.SIGTERM,
            # The socket listens from here on; a connection made while the workers warm up waits in its backlog.
            ready_marker="Listening at: ",
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
        broker = (
            f"embedded Valkey in {data_dir / 'broker'}"
            if settings.EMBEDDED_BROKER
            else settings.CELERY_BROKER_URL.split("://")[0]
        )
        self.stdout.write(
            f"Starting the Celery workers (pipeline, webhooks, bulk; broker: {broker}) and beat, the web server on "
            f"{host}:{port} and the MCP server on {host}:{mcp_port}…"
        )
        self._demo_llm_start(host, port + 2, env, base)
        for child in (worker, *queue_workers, beat, web, mcp):
            self.children.append(child)
            child.start(env, base)

    def _demo_llm_start(self, host: str, port: int, env: dict[str, str], base: Path) -> None:
        """RB_LLM_DEMO=1 and no endpoint configured: the demo LLM starts first, and the others are pointed at it."""
        if not llm_demo_wanted():
            if os.environ.get("RB_LLM_DEMO"):
                self.stdout.write(
                    "RB_LLM_DEMO is ignored: an LLM endpoint is configured (RB_LLM_BASE_URL/OPENAI_API_KEY)."
                )
            return
        port = int(os.environ.get("RB_LLM_DEMO_PORT") or port)
        if not port_is_free(host, port):
            raise CommandError(f"Port {port} on {host} (the demo LLM's) is in use: choose another, RB_LLM_DEMO_PORT=…")
        child = Child("demo-llm", demo_llm.argv(host, port), signal.SIGTERM, ready_marker=demo_llm.READY_LINE)
        self.children.append(child)
        child.start(env, base)
        self.demo_llm_url = f"http://{host}:{port}/v1"
        env.update(demo_llm.endpoint_env(self.demo_llm_url))

    def _wait_ready(self) -> int:
        """Wait until every child says it is ready (tending them meanwhile); the exit code if the stack gave up."""
        deadline = time.monotonic() + READY_TIMEOUT
        while not self.stopping and not all(child.ready.is_set() for child in self.children):
            if time.monotonic() > deadline:
                late = ", ".join(child.name for child in self.children if not child.ready.is_set())
                self.stderr.write(f"rb_run: not ready after {READY_TIMEOUT:.0f} s: {late}; continuing.")
                return 0
            code = self._tend()
            if code:
                return code
            time.sleep(0.1)
        return 0

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
        while pending.exists() and not self.stopping and not self._tend():
            if time.monotonic() > deadline:
                self.stderr.write("rb_run: demo memories are not embedded yet; retrieve may answer empty for a while.")
                return
            time.sleep(0.5)

    def _all_alive(self) -> bool:
        return all(child.alive() for child in self.children)

    def _supervise(self) -> int:
        while not self.stopping:
            code = self._tend()
            if code:
                return code
            time.sleep(0.3)
        return 0

    def _tend(self) -> int:
        """One round of supervision: restart children that died (after their
        back-off), restart the embedded PostgreSQL if it died. Returns 1 when
        a child keeps dying right after it starts (the stack gives up)."""
        now = time.monotonic()
        for child in self.children:
            if child.restart_at is not None:
                if now >= child.restart_at and not self.stopping:
                    child.start(self.child_env, Path(settings.BASE_DIR))
                    say(f"rb_run: restarted the {child.name} process (pid {child.proc.pid}).")
                continue
            code = child.proc.poll() if child.proc else None
            if code is None:
                continue
            child.kill_leftovers()  # e.g. a SIGKILLed worker's pool processes
            child.quick_deaths = child.quick_deaths + 1 if now - child.started_at < STABLE_AFTER else 1
            if child.quick_deaths >= MAX_QUICK_DEATHS:
                self.stderr.write(
                    self.style.ERROR(
                        f"rb_run: the {child.name} process exited (code {code}) {child.quick_deaths} times in a row "
                        "right after starting; stopping the rest."
                    )
                )
                return 1
            delay = min(RESTART_BACKOFF * 2 ** (child.quick_deaths - 1), RESTART_BACKOFF_MAX)
            child.restart_at = now + delay
            say(f"rb_run: the {child.name} process exited (code {code}); restarting it in {delay:g} s.")
        self._watch_postgres(now)
        self._watch_broker(now)
        return 0

    def _watch_broker(self, now: float) -> None:
        """The embedded broker died: start it again on the same data and socket (the processes reconnect)."""
        if settings.EMBEDDED_BROKER and now >= self.broker_check_at and not self.stopping:
            self.broker_check_at = now + POSTGRES_CHECK_EVERY
            try:
                if embedded.broker_pid(self.data_dir) is None and embedded.broker_ensure_running(self.data_dir):
                    say(
                        f"rb_run: the embedded broker was gone; started it again (pid {embedded.broker_pid(self.data_dir)})."
                    )
            except Exception as exc:
                say(f"rb_run: the embedded broker did not start yet ({exc}); trying again.")

    def _watch_postgres(self, now: float) -> None:
        if not settings.EMBEDDED_POSTGRES or now < self.pg_check_at or self.stopping:
            return
        self.pg_check_at = now + POSTGRES_CHECK_EVERY
        pid = embedded.postgres_pid(self.data_dir)
        if pid is not None:
            if self.pg_down_since is not None:
                say(f"rb_run: PostgreSQL is back (pid {pid}) after {now - self.pg_down_since:.1f} s.")
                self.pg_down_since, self.pg_backoff = None, PG_RETRY
            return
        if self.pg_down_since is None:
            self.pg_down_since = now
            say("rb_run: the embedded PostgreSQL server is gone; starting it again…")
        try:
            embedded.postgres_restart(self.data_dir)
        except Exception as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            say(f"rb_run: PostgreSQL did not start yet ({reason}); trying again in {self.pg_backoff:g} s.")
            self.pg_check_at = time.monotonic() + self.pg_backoff
            self.pg_backoff = min(self.pg_backoff * 2, RESTART_BACKOFF_MAX)
        else:
            self.pg_check_at = 0.0  # the next round confirms it and says so

    def _report_adopted_postgres(self) -> None:
        started = embedded.postgres_started_at(self.data_dir)
        if started is not None and started < psutil.Process().create_time() - 1:
            self.stdout.write(
                f"Database: using the embedded PostgreSQL server (pid {embedded.postgres_pid(self.data_dir)}) "
                "that was already running (left by an earlier run, or another process started it)."
            )

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
        # The examples read the token from its file, so the secret is printed once (terminal scroll-back, logs).
        auth = """-H "Authorization: Bearer $RB_TOKEN" -H 'Content-Type: application/json' -d """
        retrieve = f"curl -s {url}/api/v1/retrieve {auth}" + shlex.quote(json.dumps({"query": DEMO_QUERY}))
        trajectory = f"curl -s {url}/api/v1/trajectories {auth}" + shlex.quote(
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
        if self.demo_llm_url:
            llm = (
                f"LLM:       the demo LLM at {self.demo_llm_url} (RB_LLM_DEMO=1): rules, not a model; every verdict and "
                "item it makes is labelled Demo LLM. Set RB_LLM_BASE_URL for a real one."
            )
        elif llm_configured():
            llm = f"LLM:       {settings.RB_LLM_BASE_URL or 'OpenAI'} (model {settings.RB_LLM_MODEL})"
        else:
            llm = (
                "LLM:       none configured -- trajectories will wait in awaiting_llm; set RB_LLM_BASE_URL "
                "(and RB_LLM_MODEL, OPENAI_API_KEY) to an OpenAI-compatible endpoint and restart, or try the "
                "pipeline with RB_LLM_DEMO=1 make run (a labelled demo LLM). "
                "Humans can still judge trajectories and write memories in the UI."
            )
        line = "=" * 78
        self.stdout.write(
            "\n".join(
                [
                    "",
                    line,
                    f"ReasoningBank is running at {url}/",
                    f"Sign in:   {url}/  (local demo login: {ADMIN_USERNAME} / {ADMIN_PASSWORD})",
                    f"Django admin (raw database rows, for maintenance): {url}/admin/",
                    f"Worker log: {worker_log_level()} and above (RB_WORKER_LOG_LEVEL=INFO to see every task)",
                    f"API docs:  {url}/api/v1/docs",
                    f"MCP:       http://{host}:{mcp_port}/mcp  (streamable HTTP; Authorization: Bearer <the API token>)",
                    f"API token: {token}  (demo bank {DEMO['team']['slug']}/{DEMO['bank']['slug']}; kept in {token_file})",
                    llm,
                    "",
                    "In a shell, with the token:",
                    f"  RB_TOKEN=$(cat {shlex.quote(str(token_file))})",
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
