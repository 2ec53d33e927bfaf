"""The production topology of tests/production, run as containers: the services of docker/compose.yaml
(db, redis, migrate, web, worker ×2, beat, mcp) started with podman from their definitions in that file —
command, environment, volumes, read-only root, health checks and ``depends_on`` conditions — on the images
of tests/containers/images.py, plus the fake LLM in this process. The webhook-worker and bulk-worker
services are not started: no test here sends a webhook or bulk work (the pipeline's `worker` does not
consume their queues).

Every container shares the host's network (docker/ci/containers.conf), so the tests reach each service on
127.0.0.1, on ports chosen here; the compose file's service names (db, redis, web) are replaced by those
addresses and nothing else of it is changed. The fault tests' handles keep their meaning: ``kill`` is
``podman kill -s KILL``, ``restart_worker`` is ``podman start`` (compose's ``restart: unless-stopped``),
``freeze`` SIGSTOPs redis-server's process, ``pids`` are the container's processes as the host sees them.

podman-compose is not used to start them: with podman 4.3 (Debian 12) it ignores ``service_healthy`` and
treats ``service_completed_successfully`` as merely "stopped"; here both hold as Docker Compose defines them."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

import psutil
import psycopg
import yaml

from tests.containers import images
from tests.containers.images import podman
from tests.harness import free_port
from tests.production.topology import (
    DB_NAME,
    FAST_ENV,
    LLM,
    READY_TIMEOUT,
    SETUP_SCRIPT,
    Topology,
    TopologyError,
    wait_until,
)

COMPOSE = images.ROOT / "docker" / "compose.yaml"
PREFIX = "rbct"
DB_PASSWORD = "container-tests"


def interpolate(value: object, variables: dict[str, str]) -> object:
    """Compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?error}`` in strings, lists and mappings."""
    if isinstance(value, dict):
        return {key: interpolate(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, variables) for item in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match) -> str:
        name, op, arg = match.group(1), match.group(2) or "", match.group(3) or ""
        current = variables.get(name, "")
        if op == ":-":
            return current or arg
        if op == ":?" and not current:
            raise TopologyError(f"compose: {name} is required: {arg}")
        return current

    return re.sub(r"\$\{(\w+)(:-|:\?)?([^}]*)\}", one, value)


def load_compose(variables: dict[str, str]) -> dict:
    return interpolate(yaml.safe_load(COMPOSE.read_text()), variables)


@dataclass
class Container:
    """One container of the topology, with the handles tests/production's Service has."""

    name: str
    run_args: list[str]
    prefix: str = PREFIX
    starts: int = 0
    log_offset: int = 0

    @property
    def container(self) -> str:
        return f"{self.prefix}-{self.name}"

    def create_and_start(self) -> Container:
        podman("rm", "--force", "--ignore", self.container)
        # The health check runs when asked (``healthy``): podman's own timer needs systemd, absent here.
        podman("run", "--detach", "--name", self.container, "--health-interval=disable", *self.run_args)
        self.starts += 1
        return self

    def start(self) -> Container:
        self.log_offset = len(self.log())
        podman("start", self.container)
        self.starts += 1
        return self

    def state(self) -> dict:
        done = podman("inspect", "--format", "{{json .State}}", self.container, check=False)
        return json.loads(done.stdout) if done.returncode == 0 else {}

    def running(self) -> bool:
        return bool(self.state().get("Running"))

    @property
    def pid(self) -> int:
        return int(self.state().get("Pid") or 0)

    def exit_code(self) -> int | None:
        state = self.state()
        return None if state.get("Running") or not state else int(state.get("ExitCode", 0))

    def killed_by_sigkill(self) -> bool:
        return self.exit_code() == 137

    def pids(self) -> set[int]:
        pid = self.pid
        if not pid:
            return set()
        with contextlib.suppress(psutil.NoSuchProcess):
            return {pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))}
        return set()

    def log(self) -> str:
        done = podman("logs", self.container, check=False)
        return (done.stdout or "") + (done.stderr or "")

    def log_since_start(self) -> str:
        return self.log()[self.log_offset :]

    def kill(self) -> None:
        podman("kill", "--signal", "KILL", self.container, check=False)
        podman("wait", self.container, check=False, timeout=60)

    def stop(self, timeout: float = 20) -> None:
        podman("stop", "--time", str(int(timeout)), self.container, check=False, timeout=timeout + 60)

    def healthy(self) -> bool:
        """The compose file's (or image's) health check, run once now."""
        return podman("healthcheck", "run", self.container, check=False, timeout=60).returncode == 0

    def remove(self) -> None:
        podman("rm", "--force", "--time", "5", "--ignore", self.container, check=False)


def replica_container(compose: dict, db_port: int, replica_port: int, prefix: str = PREFIX) -> Container:
    """The compose file's `db-replica` (its entrypoint, user and environment), its primary on ``db_port`` of this
    host, listening on ``replica_port``: on first start a base backup of the primary, then streaming from it."""
    spec = compose["services"]["db-replica"]
    shell, flag, script = spec["entrypoint"]
    script = script.replace("$$", "$")  # compose turns $$ into $ (the script's own variables)
    env = {**spec["environment"], "PRIMARY_HOST": "127.0.0.1", "PRIMARY_PORT": db_port, "PGPORT": replica_port}
    args = [*(f"--env={key}={value}" for key, value in env.items()), "--user", spec["user"], "--entrypoint", shell]
    return Container("db-replica", [*args, images.POSTGRES, flag, script], prefix=prefix)


class ContainerPostgres:
    def __init__(self, service: Container, port: int):
        self.service = service
        self.port = port

    @property
    def url(self) -> str:
        return f"postgres://reasoningbank:{DB_PASSWORD}@127.0.0.1:{self.port}/{DB_NAME}"

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, connect_timeout=3, autocommit=True)

    def answers(self) -> bool:
        try:
            with self._connect() as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            return False

    def start(self) -> None:
        self.service.start()
        wait_until(self.answers, timeout=60, what="PostgreSQL (container) to accept connections")

    def stop(self) -> None:
        self.service.stop(timeout=30)  # SIGINT (the image's STOPSIGNAL): fast shutdown

    def count(self, sql: str, params: tuple = ()) -> int:
        with self._connect() as conn:
            return conn.execute(sql, params).fetchone()[0]

    def ids(self, sql: str, params: tuple = ()) -> list:
        with self._connect() as conn:
            return [row[0] for row in conn.execute(sql, params).fetchall()]

    def start_replica(self, compose: dict, port: int) -> ContainerPostgres:
        """The compose file's `db-replica` of this primary, on ``port``, answering (a hot standby)."""
        with self._connect() as conn:  # pg_basebackup starts with a spread checkpoint: this one leaves it nothing
            conn.execute("CHECKPOINT")
        replica = ContainerPostgres(replica_container(compose, self.port, port, self.service.prefix), port)
        replica.service.create_and_start()
        wait_until(replica.answers, timeout=180, what="the replica container to accept connections")
        return replica


class ContainerRedis:
    def __init__(self, service: Container, port: int):
        self.service = service
        self.port = port

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.service.start()
        wait_until(self.service.healthy, timeout=30, what="redis (container) to answer PING")

    def freeze(self) -> None:
        os.kill(self.service.pid, signal.SIGSTOP)  # redis-server's process, as the host sees it

    def thaw(self) -> None:
        os.kill(self.service.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.service.kill()


@dataclass
class ContainerTopology(Topology):
    """docker/compose.yaml's services as podman containers; the same handles as the process Topology."""

    image: str = images.APP
    extra_env: dict[str, str] = field(default_factory=dict)
    # Names every container and volume: topologies of different tests never touch each other's.
    prefix: str = PREFIX
    # False: migrate and web only (a test of what web serves, with no pipeline, beat or MCP server behind it).
    pipeline: bool = True
    # Run by ``manage shell`` once web is ready; its last line is kept as ``token``.
    setup_script: str = SETUP_SCRIPT

    def __post_init__(self):
        self.llm = LLM()
        self.llm_started = False
        self.db_port, self.redis_port, self.web_port, self.mcp_port = (free_port() for _ in range(4))
        self.base_url = f"http://127.0.0.1:{self.web_port}"
        self.token = ""
        self.timings: dict[str, float] = {}
        self.compose = load_compose(
            {"SECRET_KEY": "container-tests-" + "x" * 40, "POSTGRES_PASSWORD": DB_PASSWORD, "RB_LLM_MODEL": "fake"}
        )
        self.containers: dict[str, Container] = {}
        self.web: Container | None = None
        self.worker_services: list[Container] = []
        self.beat: Container | None = None
        self.mcp: Container | None = None
        self.postgres = ContainerPostgres(self._container("db"), self.db_port)
        self.redis = ContainerRedis(self._container("redis"), self.redis_port)
        self.watchdog = None

    # --- what each service runs, from the compose file ------------------------------------------------
    def _volumes(self, service: dict) -> list[str]:
        args = []
        for volume in service.get("volumes", []):
            source, _, target = volume.partition(":")
            if source.startswith((".", "/")):  # a file of the repository, relative to the compose file
                args += ["--volume", f"{(COMPOSE.parent / source).resolve()}:{target}"]
            else:
                args += ["--volume", f"{self.prefix}-{source}:{target}"]
        return args

    def app_env(self, service: str = "web") -> dict[str, str]:
        """The compose file's environment of ``service``, pointed at this host's ports and the fake LLM."""
        env = {key: str(value) for key, value in self.compose["services"][service].get("environment", {}).items()}
        env.update(
            {
                "DATABASE_URL": self.postgres.url,
                "REDIS_URL": self.redis.url,
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                "RB_LLM_BASE_URL": self.llm.base_url,
                "RB_LLM_MODEL": "fake-model",
                "PORT": str(self.web_port),
                "RB_MCP_PORT": str(self.mcp_port),
                "RB_MCP_API_URL": self.base_url,
                **FAST_ENV,
                **self.extra_env,
            }
        )
        return env

    def _app_args(self, service: str, image: str | None = None) -> list[str]:
        spec = self.compose["services"][service]
        args = []
        for key, value in self.app_env(service).items():
            args += ["--env", f"{key}={value}"]
        if spec.get("read_only"):
            args.append("--read-only")
            args += [f"--tmpfs={path}" for path in spec.get("tmpfs", [])]
        return [*args, *self._volumes(spec), image or self.image, *spec.get("command", [])]

    def _container(self, service: str, *, name: str | None = None, extra: list[str] | None = None) -> Container:
        spec = self.compose["services"][service]
        if service == "db":
            env = {**spec["environment"], "PGPORT": str(self.db_port)}
            args = [f"--env={key}={value}" for key, value in env.items()]
            test = ["CMD-SHELL", "pg_isready -h 127.0.0.1 -U reasoningbank -d reasoningbank"]
            args += ["--health-cmd", test[1], *self._volumes(spec), images.POSTGRES]
        elif service == "redis":
            command = [*spec["command"][1:], "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", ""]
            args = ["--health-cmd", f"redis-cli -p {self.redis_port} ping", *self._volumes(spec), images.REDIS]
            args += command
        else:
            args = self._app_args(service) + (extra or [])
        container = Container(name or service, args, prefix=self.prefix)
        self.containers[container.name] = container
        return container

    # --- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> ContainerTopology:
        started = time.monotonic()
        try:
            self.llm.start()
            self.llm_started = True
            self._remove_all(volumes=True)
            for part in (self.postgres.service, self.redis.service):
                part.create_and_start()
            with self._timed("db + redis healthy"):
                for part in (self.postgres.service, self.redis.service):
                    wait_until(part.healthy, timeout=90, what=f"{part.name} to be healthy", interval=0.5)
            self._start_app(started)
            with self._timed("bank + token"):
                self.token = self.manage("shell", "-c", self.setup_script).strip().splitlines()[-1]
            with self._timed("workers ready"):
                for worker in self.worker_services:
                    self.wait_worker_ready(worker)
        except BaseException:
            print(self.logs())
            self.stop()
            raise
        return self

    def _start_app(self, started: float) -> None:
        """migrate (to completion), then web (until /readyz), then (``pipeline``) the workers, beat and mcp."""
        with self._timed("migrate (one-shot container)"):
            self.run_migrate()
        self.web = self._container("web").create_and_start()
        with self._timed("web ready"):
            self.wait_web_ready()
        self.timings["up to /readyz 200 (s)"] = round(time.monotonic() - started, 1)
        if not self.pipeline:
            return
        self.worker_services = [
            self._container(
                "worker", name=f"worker{n}", extra=["--concurrency", "1", "--hostname", f"worker{n}@%h"]
            ).create_and_start()
            for n in (1, 2)
        ]
        self.beat = self._container("beat").create_and_start()
        self.mcp = self._container("mcp").create_and_start()

    def upgrade(self, image: str) -> str:
        """A deploy of ``image``: stop the app's containers (data and volumes stay), migrate forward with the
        new image, start everything on it. Returns the migrate step's log."""
        for container in [*self.worker_services, self.beat, self.mcp, self.web]:
            if container is not None:
                container.stop(timeout=20)
                container.remove()
        self.image = image
        started = time.monotonic()
        self._start_app(started)
        for worker in self.worker_services:
            self.wait_worker_ready(worker)
        return self.containers["migrate"].log()

    def run_migrate(self) -> None:
        """The compose file's one-shot migrate service; web and workers start only after it exited 0."""
        migrate = self._container("migrate").create_and_start()
        podman("wait", migrate.container, timeout=600)
        code = migrate.exit_code()
        if code != 0:
            raise TopologyError(f"migrate exited {code}; web and workers stay down:\n{migrate.log()[-4000:]}")

    def manage(self, *args: str, image: str | None = None, volume: str | None = None) -> str:
        """``docker compose run --rm web manage ...``: a one-off container with web's environment."""
        env = [f"--env={key}={value}" for key, value in self.app_env("web").items()]
        mount = ["--volume", volume] if volume else []
        done = podman("run", "--rm", *env, *mount, image or self.image, "manage", *args, check=False, timeout=300)
        if done.returncode != 0:
            raise TopologyError(f"manage {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def _remove_all(self, *, volumes: bool) -> None:
        names = podman("ps", "--all", "--format", "{{.Names}}", check=False).stdout.split()
        mine = [name for name in names if name.startswith(f"{self.prefix}-")]
        if mine:
            podman("rm", "--force", "--time", "5", *mine, check=False)
        if volumes:
            for volume in podman("volume", "ls", "--format", "{{.Name}}", check=False).stdout.split():
                if volume.startswith(f"{self.prefix}-"):
                    podman("volume", "rm", "--force", volume, check=False)

    def _remove_volume(self, name: str) -> None:
        podman("volume", "rm", "--force", f"{self.prefix}-{name}")

    def stop(self) -> None:
        with self._timed("down"):
            for container in [*self.worker_services, self.beat, self.mcp, self.web]:
                if container is not None:
                    container.stop(timeout=10)
            if self.llm_started:  # the fake LLM's shutdown() waits forever on a server never started
                self.llm.reset()
                self.llm.stop()
                self.llm_started = False
            self._remove_all(volumes=True)

    def services(self) -> list[Container]:
        return [c for c in (self.postgres.service, self.redis.service, self.web, *self.worker_services, self.beat) if c]

    def wait_worker_ready(self, worker: Container, timeout: float = READY_TIMEOUT) -> None:
        def ready() -> bool:
            log = worker.log_since_start()
            if not worker.running():
                raise TopologyError(f"{worker.name} exited:\n{log[-4000:]}")
            return " ready." in log and "embedding model loaded" in log

        wait_until(ready, timeout=timeout, what=f"{worker.name} to be ready", interval=0.5)


# Where podman looks for its helper binaries before PATH (containers.conf's helper_binaries_dir default).
PODMAN_HELPER_DIRS = ("/usr/local/libexec/podman", "/usr/local/lib/podman", "/usr/libexec/podman", "/usr/lib/podman")


def pause_binary_missing() -> str:
    """Why podman cannot build the pause image a pod needs (``podman kube play``); empty when it can.
    podman only recommends catatonit, so an install without recommends leaves it out."""
    if shutil.which("catatonit") or any(os.access(os.path.join(d, "catatonit"), os.X_OK) for d in PODMAN_HELPER_DIRS):
        return ""
    return "catatonit is not installed (apt-get install catatonit): podman builds a pod's pause image from it"


def podman_available() -> str:
    """Why podman cannot run containers here; empty when it can."""
    for binary in ("podman", "runc"):
        if shutil.which(binary) is None:
            return f"{binary} is not installed (apt-get install podman runc mmdebstrap)"
    if not images.exists(images.BASE) and shutil.which("mmdebstrap") is None:
        return "mmdebstrap is not installed and there is no base image (apt-get install mmdebstrap)"
    done = subprocess.run(["podman", "info"], capture_output=True, text=True, env=images.podman_env(), check=False)
    return "" if done.returncode == 0 else f"podman does not work here: {done.stderr.strip()[-300:]}"
