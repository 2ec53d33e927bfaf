"""Supervision of `make run`'s child processes (reasoningbank_site/management/commands/rb_run.py).

Each child runs in its own session so a terminal Ctrl-C reaches only rb_run,
which then stops each child the way that child shuts down cleanly. Its output
is relayed line by line with the child's name in front, and the line that says
it is ready (``ready_marker``) is watched for. The children's command lines
(web_argv, worker_argv) are here too: the tests and benches start the same ones."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from reasoningbank_site import workers


def die_with_parent(signum: int, parent: int) -> None:
    """Runs in the child before exec (Linux): if rb_run is killed outright, the
    kernel sends the child its stop signal instead of leaving it running."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signum)  # PR_SET_PDEATHSIG; tied to the thread that forks: always rb_run's main thread
    except OSError:
        return
    if os.getppid() != parent:  # rb_run died before prctl took effect
        os.kill(os.getpid(), signum)


def say(text: str) -> None:
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        pass


@dataclass
class Child:
    name: str
    argv: list[str]
    stop_signal: int
    ready_marker: str
    proc: subprocess.Popen | None = None
    ready: threading.Event = field(default_factory=threading.Event)
    started_at: float = 0.0
    starts: int = 0
    quick_deaths: int = 0  # deaths in a row, each soon after its start
    restart_at: float | None = None  # when a dead child is due to start again

    def start(self, env: dict[str, str], cwd: Path) -> None:
        """Start (or restart) the process; call from rb_run's main thread (PR_SET_PDEATHSIG)."""
        self.ready = threading.Event()
        self.starts += 1
        self.started_at = time.monotonic()
        self.restart_at = None
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
            preexec_fn=(
                functools.partial(die_with_parent, self.stop_signal, os.getpid())
                if sys.platform.startswith("linux")
                else None
            ),
        )
        threading.Thread(
            target=self._relay, args=(self.proc, self.ready, self.starts), daemon=True, name=f"relay-{self.name}"
        ).start()

    def _relay(self, proc: subprocess.Popen, ready: threading.Event, start: int) -> None:
        assert proc.stdout
        for line in proc.stdout:
            if self.ready_marker in line and not ready.is_set():
                ready.set()
                if start > 1:
                    say(f"rb_run: the {self.name} process is back (pid {proc.pid}, restart {start - 1}).")
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


def web_argv(host: str, port: int) -> list[str]:
    """The web server `make run` starts: gunicorn's stock threaded worker, as
    docker/entrypoint.sh starts production's. Each thread keeps one database
    connection, so the web holds a fixed number of connections, well below
    PostgreSQL's max_connections, however many agents connect at once."""
    return [
        *[sys.executable, "-m", "gunicorn", "reasoningbank_site.wsgi:application", "--bind", f"{host}:{port}"],
        *["--workers", os.environ.get("WEB_CONCURRENCY") or "2", "--threads", os.environ.get("WEB_THREADS") or "4"],
        *["--worker-class", "gthread", "--timeout", "60", "--access-logfile", "-"],
        # gunicorn's control socket is one path per user (~/.gunicorn): a second stack would take it over.
        "--no-control-socket",
    ]


def worker_log_level() -> str:
    """The local worker's log level: RB_WORKER_LOG_LEVEL, WARNING when unset."""
    return (os.environ.get("RB_WORKER_LOG_LEVEL") or "WARNING").upper()


def worker_argv(data_dir: Path, *, beat: bool = False, role: workers.WorkerRole = workers.PIPELINE_WORKER) -> list[str]:
    """A Celery worker `make run` starts, one per role of reasoningbank_site/workers.py (the pipeline's
    runs in bench/pipeline_throughput.py too, there with beat inside it: ``beat``). Gossip, mingle and
    heartbeats serve a cluster of workers; the local ones do without them."""
    schedule = ["-B", "--schedule", str(data_dir / "celerybeat-schedule")] if beat else []
    # WARNING by default: at INFO the beat's periodic tasks print about a line a second and scroll the banner away.
    hostname = f"{'rb_run' if role == workers.PIPELINE_WORKER else role.name}@{socket.gethostname()}"
    return [
        *workers.worker_argv(role, loglevel=worker_log_level(), hostname=hostname),
        *schedule,
        *["--without-gossip", "--without-mingle", "--without-heartbeat"],
    ]


def beat_argv(data_dir: Path) -> list[str]:
    """Celery beat as a process of its own, which `make run` supervises like the workers: beat embedded in
    a worker (-B) runs as that worker's child, which nobody restarts when it dies, and without beat the
    sweeper that re-sends lost work never runs."""
    return [
        *[sys.executable, "-m", "celery", "-A", "reasoningbank_site", "beat"],
        *["--schedule", str(data_dir / "celerybeat-schedule"), "--loglevel", worker_log_level()],
    ]
