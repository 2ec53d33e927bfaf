"""What every benchmark shares: its own database on the configured server,
Django set up against it, a real gunicorn serving it on a loopback port, and
percentiles. Import it first: it points Django at the bench database."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

# The code under test: this checkout, or another one (RB_BENCH_CODE_ROOT) for a side by side in-process worker.
ROOT = Path(os.environ.get("RB_BENCH_CODE_ROOT") or Path(__file__).resolve().parent.parent).resolve()
sys.path.insert(0, str(ROOT))
BENCH_DB = os.environ.get("RB_BENCH_DB", "rb_bench")
os.environ["RB_DATABASE_NAME"] = BENCH_DB
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank_site.settings")


def _create_database() -> None:
    """CREATE DATABASE rb_bench on the configured server if it is missing."""
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    params = {
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "dbname": "postgres",
    }
    with psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone():
            conn.execute(f'CREATE DATABASE "{BENCH_DB}"')


def setup_django() -> None:
    """django.setup() against the bench database, created and migrated."""
    import django

    django.setup()
    _create_database()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def bench_bank():
    """The benches' user ``bench`` and bank ``bench`` (created on the first run, kept after): ``(user, bank)``.
    Call after setup_django()."""
    from django.contrib.auth import get_user_model

    from accounts.models import Bank
    from accounts.teams.banks import bank_create
    from accounts.teams.services import team_create

    User = get_user_model()
    user = User.objects.filter(username="bench").first() or User.objects.create_user("bench", password="bench-pass-123")
    bank = Bank.objects.filter(slug="bench").first()
    if bank is None:
        bank = bank_create(team=team_create(name="Bench", slug="bench", owner=user), name="Bench", slug="bench")
    return user, bank


def retrievals_logged(bank, before: int, answered: int, timeout: float = 30.0) -> int:
    """Wait until ``answered`` retrievals more than ``before`` are logged for
    ``bank`` (a log is written before its answer; a tree compared with
    ``--compare`` may write it just after), assert that
    every one is, and return the count: a benchmark whose answers were not
    all logged did less than a user's requests do."""
    from memories.serving.models import RetrievalEvent
    from tests.harness import TimedOut, wait_until

    def logged() -> int:
        return RetrievalEvent.objects.filter(bank=bank).count() - before

    with contextlib.suppress(TimedOut):
        wait_until(lambda: logged() >= answered, timeout=timeout, interval=0.05, what="the retrievals' logs")
    logged = logged()
    assert logged == answered, f"{logged} of {answered} answered retrievals logged"
    return logged


class KeptConnection:
    """``POST /api/v1/retrieve`` over one HTTP/1.1 connection kept between
    requests, as the Python SDK's httpx client sends them. A connection the
    server closed while it was idle (gunicorn's keep-alive is 2 s) is opened
    again once, and counted in ``reopened``, the retry inside the timing."""

    RETRYABLE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)

    def __init__(self, base: str):
        host, port = base.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=60)
        self.reopened = 0

    def _send(self, body: bytes, headers: dict) -> http.client.HTTPResponse:
        self.connection.request("POST", "/api/v1/retrieve", body=body, headers=headers)
        return self.connection.getresponse()

    def retrieve(self, secret: str, query: str, k: int) -> float:
        """ms for one retrieve of ``k`` items, its answer asserted to serve all ``k``."""
        body = json.dumps({"query": query, "k": k}).encode()
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        started = time.perf_counter()
        try:
            response = self._send(body, headers)
        except self.RETRYABLE:  # closed by the server while idle: nothing was answered, send it again
            self.connection.close()
            self.reopened += 1
            response = self._send(body, headers)
        answer = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status == 200, answer
        assert len(json.loads(answer)["items"]) == k, answer  # the real work: k items served
        assert not response.will_close, "the server will close the kept connection"
        return elapsed

    def close(self) -> None:
        self.connection.close()


def floor_search(bank, text: str, k: int):
    """The floor of a retrieval, in this process: the query's embedding and the
    production SQL search (``approved_items_search``), asserted to find ``k``
    items. Returns (ms, the query vector, the (item, similarity) pairs found)."""
    from memories.embedding.model import embed_text
    from memories.serving.search import approved_items_search

    started = time.perf_counter()
    vector = embed_text(text)
    found = approved_items_search(bank=bank, vector=vector, k=k, min_similarity=-1.0)
    elapsed = (time.perf_counter() - started) * 1000
    assert len(found) == k, len(found)
    return elapsed, vector, found


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def start_server(
    *, port: int | None = None, workers: int = 1, threads: int = 1, root: Path | None = None
) -> tuple[subprocess.Popen, str]:
    """gunicorn serving the bench database on 127.0.0.1:``port`` (a free one
    when None) from this checkout, or from ``root`` (another checkout, for a
    before/after), with production's worker class when ``threads`` > 1 (gthread;
    one thread: gunicorn's sync worker); returns once the OpenAPI document answers."""
    from tests.harness import free_port  # here, not at import: a --compare child's older checkout may lack it

    port = port or free_port()
    env = {**os.environ, "RB_DATABASE_NAME": BENCH_DB, "DEBUG": "0", "LOG_LEVEL": "WARNING"}
    cmd = [
        sys.executable,
        "-m",
        "gunicorn",
        "reasoningbank_site.wsgi",
        "-w",
        str(workers),
        "--threads",
        str(threads),
        "-b",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
        "--timeout",
        "120",
    ]
    if threads > 1:
        cmd += ["--worker-class", "gthread"]  # as docker/entrypoint.sh
    proc = subprocess.Popen(cmd, cwd=root or ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{base}/api/v1/openapi.json", timeout=10).read()  # slow on a busy machine
            return proc, base
        except Exception:
            if proc.poll() is not None:
                raise RuntimeError("the web server exited during start-up") from None
            time.sleep(0.3)
    proc.terminate()
    raise RuntimeError("the web server did not start within 120 s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def worker_memory_mb(proc: subprocess.Popen) -> list[tuple[float, float]]:
    """(RSS, PSS) in MB of each gunicorn worker (the children of ``proc``):
    PSS splits pages shared between processes, so its sum is what they cost together."""
    out = []
    for worker in psutil.Process(proc.pid).children():
        with contextlib.suppress(psutil.Error):  # ended meanwhile
            memory = worker.memory_full_info()  # from /proc/<pid>/smaps_rollup
            out.append((memory.rss / 2**20, memory.pss / 2**20))
    return sorted(out)


def cpu_seconds(server: subprocess.Popen) -> dict[str, dict[int, float]]:
    """CPU seconds (user + system) spent so far by each process of the web
    server (gunicorn's master and workers), of PostgreSQL and of this process
    (the clients), per process id; cpu_spent of two of them says where a
    phase's CPU went."""

    def used(p: psutil.Process) -> float:
        t = p.cpu_times()
        return t.user + t.system

    web = psutil.Process(server.pid)
    parts = {
        "web": [web, *web.children(recursive=True)],
        "db": [p for p in psutil.process_iter(["name"]) if p.info["name"] == "postgres"],
        "client": [psutil.Process()],
    }
    out: dict[str, dict[int, float]] = {part: {} for part in parts}
    for part, processes in parts.items():
        for p in processes:
            with contextlib.suppress(psutil.Error):  # ended meanwhile
                out[part][p.pid] = used(p)
    return out


def cpu_spent(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
    """CPU seconds each part spent between two cpu_seconds: a process started
    since counts from zero; one that ended meanwhile (a closed database
    connection, an autovacuum worker) is left out, its last share unknown."""
    return {part: sum(t - before[part].get(pid, 0.0) for pid, t in after[part].items()) for part in after}


def connections_per_worker(server: subprocess.Popen, base: str) -> list[int]:
    """How many established TCP connections each web worker holds now, most
    first (a kept-alive client's requests all go to the worker that accepted it)."""
    port = int(base.rsplit(":", 1)[1])
    counts = []
    for worker in psutil.Process(server.pid).children():
        try:
            held = worker.net_connections(kind="tcp")
        except psutil.Error:
            continue
        counts.append(sum(1 for c in held if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.port == port))
    return sorted(counts, reverse=True)


def load_note() -> str:
    """The machine's load beside an absolute figure (the numbers are only comparable on a quiet machine)."""
    one, five, _ = os.getloadavg()
    return f"cpus={os.cpu_count()} load1={one:.2f} load5={five:.2f}"


def on_off_main(doc: str, title: str, run, table) -> None:
    """The command line of a bench that compares a setting on and off over one bank of approved items:
    ``--size``, ``--queries``, ``--reuse``; prints ``title`` with the machine's load, then ``table(run(…))``."""
    import argparse

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="approved items in the target bank")
    parser.add_argument("--queries", type=int, default=200, help="queries per setting")
    parser.add_argument("--reuse", action="store_true", help="keep the items a previous run loaded")
    args = parser.parse_args()
    started = time.perf_counter()
    result = run(args.size, args.queries, args.reuse)
    print(f"\n## {title} ({load_note()}, {time.perf_counter() - started:.0f} s total)\n")
    print(table(result))
