"""The after-commit publish of a transaction's tasks, in process, on both brokers.

    python bench/publish.py [--tasks 100] [--rounds 10] [--backlog 10000]

For each broker (the embedded broker in a folder of its own, then a private
``redis-server`` when one is on PATH) a child process commits
``--rounds`` transactions that each enqueue ``--tasks`` tasks, two ways,
alternating round by round:

- **fresh**: a new broker connection per task (the alternative the kept
  connection avoids, inlined below);
- **kept**: ``enqueue_on_commit`` (one on_commit callback per task, each
  published by Celery's ``apply_async`` on a connection of the app's pool).

The embedded broker runs once empty and once with ``--backlog`` messages
already queued. Nobody consumes; the script asserts every task reached the
queue. Prints ms per task (p50 over rounds) and the load average."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import redis
from common import pct, setup_django

from tests.harness import free_port


def _fresh_publish(app, settings, task, args) -> None:
    """A publish on a new broker connection of its own: what the kept connection saves."""
    timeout = settings.RB_BROKER_PUBLISH_TIMEOUT
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    with app.connection_for_write(connect_timeout=timeout, transport_options=options) as connection:
        task.apply_async(args, connection=connection, retry=False)


def child(args) -> None:
    setup_django()
    from django.conf import settings
    from django.db import transaction

    from reasoningbank_site.celery import _registered_task, app, enqueue_on_commit

    task = _registered_task("trajectories.process")
    url = settings.CELERY_BROKER_URL
    path = url.removeprefix("redis+socket://")
    client = redis.Redis(unix_socket_path=path) if path != url else redis.Redis.from_url(url)

    def queued() -> int:
        return client.llen("celery")

    if args.backlog:
        with app.connection_for_write() as connection:
            for n in range(args.backlog):
                task.apply_async((n,), connection=connection)

    def fresh() -> None:
        with transaction.atomic():
            for n in range(args.tasks):
                transaction.on_commit(lambda n=n: _fresh_publish(app, settings, task, (n,)))

    def kept() -> None:
        with transaction.atomic():
            for n in range(args.tasks):
                enqueue_on_commit("trajectories.process", n)

    timings: dict[str, list[float]] = {"fresh": [], "kept": []}
    for r in range(args.rounds):
        for name, run in sorted({"fresh": fresh, "kept": kept}.items(), reverse=r % 2 == 1):
            before = queued()
            started = time.perf_counter()
            run()
            timings[name].append((time.perf_counter() - started) * 1000 / args.tasks)
            assert queued() - before == args.tasks, f"{name}: {queued() - before} of {args.tasks} tasks queued"
    label = f"{args.broker}{f' backlog={args.backlog}' if args.backlog else ''}"
    for name, ms in timings.items():
        print(
            f"publish: broker={label} way={name} tasks_per_transaction={args.tasks} rounds={args.rounds} "
            f"ms_per_task_p50={pct(ms, 50):.2f} ms_per_task_max={max(ms):.2f} load1={os.getloadavg()[0]:.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--backlog", type=int, default=10000)
    parser.add_argument("--broker", choices=["embedded", "redis"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.broker:
        child(args)
        return
    runs = [("embedded", 0), ("embedded", args.backlog)]
    if shutil.which("redis-server"):
        runs.append(("redis", 0))
    for broker, backlog in runs:
        folder = tempfile.mkdtemp(prefix="rb-bench-publish-")
        env = {**os.environ, "RB_BROKER_DIR": folder}
        env.pop("REDIS_URL", None)
        env.pop("CELERY_BROKER_URL", None)
        server = None
        if broker == "redis":
            port = free_port()
            server = subprocess.Popen(
                ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL
            )
            time.sleep(0.5)
            env["CELERY_BROKER_URL"] = f"redis://127.0.0.1:{port}/0"
        try:
            cmd = [sys.executable, __file__, "--broker", broker, "--tasks", str(args.tasks)]
            cmd += ["--rounds", str(args.rounds), "--backlog", str(backlog)]
            subprocess.run(cmd, env=env, check=True)
        finally:
            if server is not None:
                server.terminate()
                server.wait()
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
