"""Memory of the production processes with the embedding model loaded.

    python bench/memory.py [--web-workers 2] [--web-threads 4] [--worker-concurrency 2]

Starts gunicorn (``--web-workers`` workers × ``--web-threads`` threads, as docker/entrypoint.sh) and a
Celery worker (prefork, ``--worker-concurrency`` pool processes, as
docker/entrypoint.sh) on the bench database with a broker folder of their own,
waits until every web worker answers /readyz (model loaded) and every pool
process has embedded an item (a real ``memories.embed_item`` task each, asserted
in the database), then reads each process's RSS and PSS (/proc/<pid>/smaps_rollup:
PSS divides shared pages between the processes sharing them — machine-wide, so
other programs mapping the same libraries lower it —; USS is a process's private
pages; RSS counts shared library pages once per process). The real total lies
between the USS sum and the RSS sum; the PSS sum is its estimate.
Prints one line per process and the totals against the 2 GB memory budget."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

from common import ROOT, setup_django, start_server, stop_server

GOAL_MB = 2048


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


def _memory(pid: int) -> tuple[float, float, float]:
    """(RSS, PSS, USS) of one process in MB; USS = its private pages only."""
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] in ("Rss:", "Pss:", "Private_Clean:", "Private_Dirty:"):
                values[parts[0]] = int(parts[1]) / 1024
    return values["Rss:"], values["Pss:"], values["Private_Clean:"] + values["Private_Dirty:"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--web-threads", type=int, default=4, help="threads per web worker (production: WEB_THREADS=4)")
    parser.add_argument("--worker-concurrency", type=int, default=2)
    args = parser.parse_args()

    broker = tempfile.mkdtemp(prefix="rb-bench-memory-broker-")
    os.environ["RB_BROKER_DIR"] = broker
    setup_django()
    from memories.items.models import MemoryItem
    from reasoningbank_site.celery import enqueue_on_commit
    from tests import factories

    web, base = start_server(workers=args.web_workers, threads=args.web_threads)
    env = {**os.environ, "DEBUG": "0", "LOG_LEVEL": "WARNING"}
    worker = subprocess.Popen(
        [
            *(sys.executable, "-m", "celery", "-A", "reasoningbank_site", "worker", "--loglevel", "WARNING"),
            *("--concurrency", str(args.worker_concurrency), "--hostname", f"memory-{uuid.uuid4().hex[:6]}@%h"),
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        ready, deadline = 0, time.time() + 300
        while ready < 4 * args.web_workers:  # several 200s in a row: every worker has the model
            assert time.time() < deadline, "the web workers did not load the model within 300 s"
            try:
                with urllib.request.urlopen(f"{base}/readyz", timeout=10):
                    ready += 1
            except urllib.error.URLError:
                ready = 0
                time.sleep(0.5)
        bank = factories.make_bank(team=factories.make_team(slug=f"memory-{uuid.uuid4().hex[:6]}"))
        items = MemoryItem.objects.bulk_create(
            MemoryItem(bank=bank, title=f"Lesson {n}", description="Use when testing.", content="Check twice.")
            for n in range(8 * args.worker_concurrency)
        )
        for item in items:  # more tasks than pool processes, so each process embeds
            enqueue_on_commit("memories.embed_item", item.pk)
        while MemoryItem.objects.filter(pk__in=[i.pk for i in items], embedding__isnull=True).exists():
            assert time.time() < deadline, "the worker did not embed the items within 300 s"
            time.sleep(0.5)
        time.sleep(2)
        pools = _children(worker.pid)
        assert len(pools) == args.worker_concurrency, pools
        rows = [("web master", web.pid)] + [("web worker", p) for p in _children(web.pid)]
        rows += [("celery main", worker.pid)] + [("celery pool", p) for p in pools]
        total_rss = total_pss = total_uss = 0.0
        for name, pid in rows:
            rss, pss, uss = _memory(pid)
            total_rss += rss
            total_pss += pss
            total_uss += uss
            print(f"process={name.replace(' ', '_')} pid={pid} rss_mb={rss:.0f} pss_mb={pss:.0f} uss_mb={uss:.0f}")
        print(
            f"total: web_workers={args.web_workers} worker_concurrency={args.worker_concurrency} "
            f"rss_mb={total_rss:.0f} pss_mb={total_pss:.0f} uss_mb={total_uss:.0f} goal_mb={GOAL_MB} "
            f"load1={os.getloadavg()[0]:.2f}"
        )
        assert total_pss < GOAL_MB, f"{total_pss:.0f} MB ≥ {GOAL_MB} MB"
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
        stop_server(web)
        shutil.rmtree(broker, ignore_errors=True)


if __name__ == "__main__":
    main()
