"""Ingest benchmark: many agents sending trajectories at once.

    python bench/ingest.py [--batch-clients 8] [--batches 10] [--batch-size 100]
                           [--single-clients 12] [--singles 50] [--rounds R] [--port N]
                           [--workers 2] [--threads 4] [--compare DIR [--compare-threads N]]

Starts gunicorn as docker/entrypoint.sh does (2 workers × 4 threads: one
process per core, the threads overlap the database round trips; its worker
class, which takes a new connection only while a thread is free), then

- **batch**: ``--batch-clients`` threads each send ``--batches`` requests of
  ``--batch-size`` trajectories to ``POST /api/v1/trajectories/batch``;
- **single**: ``--single-clients`` threads each send ``--singles`` requests to
  ``POST /api/v1/trajectories``.

Every client keeps its HTTP connection open, as an agent's HTTP client does.
The trajectories are realistic: 3–6 native steps or an OpenAI conversation,
half with an ``external_id``, a third linking a retrieval of the bank, some with
the agent's own outcome (the bank trusts it, so it records a judgment). Each
web server publishes its tasks (``trajectories.process`` per single POST,
``trajectories.process_many`` per batch, which a worker would fan out) to an
embedded broker of its own (nobody consumes it).

Asserts every answer accepted every trajectory, then counts the bank's
trajectories in the database, the retrievals' ``linked`` counters and the agent
judgments, and (embedded broker) that the queued tasks carry each stored
trajectory exactly once: nothing lost. Prints trajectories/s, request p50/p99,
the CPU milliseconds per trajectory of the web server, of PostgreSQL and of
this process (the clients, and its sampling of the connections every 0.5 s), each
phase's connections per web worker with its rate (``6/6:350``: each worker
held 6 of the clients' connections, 350 trajectories/s), and the load average.

``--compare DIR`` also serves another checkout of the code (e.g. the commit
before a change) against the same database (its own bank), and runs the
phases of the two interleaved (order alternating per ``--rounds``), for a
before/after measured under the same machine load; ``--compare-threads N``
serves that side with N threads per worker (1: gunicorn's sync worker).
``CELERY_BROKER_URL=redis://…`` in the environment runs both on Redis."""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import shutil
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import connections_per_worker, cpu_seconds, cpu_spent, pct, setup_django, start_server, stop_server

WORKERS, THREADS = 2, 4  # docker/entrypoint.sh's defaults (WEB_CONCURRENCY, WEB_THREADS)
RETRIEVALS = 50


def _seed():
    from django.contrib.auth import get_user_model

    from memories.serving.models import RetrievalEvent
    from tests import factories

    user = get_user_model().objects.create_user(f"bench-{uuid.uuid4().hex[:8]}")
    team = factories.make_team(owner=user, slug=f"ingest-{uuid.uuid4().hex[:6]}")
    bank = factories.make_bank(team=team, slug="ingest", rate_limit_per_minute=0, trust_agent_outcome=True)
    retrievals = RetrievalEvent.objects.bulk_create(
        RetrievalEvent(bank=bank, query=f"task {n}", mode="items", k=3) for n in range(RETRIEVALS)
    )
    return bank, factories.make_token(bank), [str(r.public_id) for r in retrievals]


def trajectory(n: int, retrieval_ids: list[str], tag: str) -> dict:
    """The n-th realistic trajectory of a run (deterministic in n)."""
    city = ["Lyon", "Porto", "Oslo", "Quito", "Hanoi"][n % 5]
    body: dict = {"task": f"Find the cheapest direct flight to {city} in May (run {tag}-{n}).", "agent": "bench-agent"}
    if n % 4 == 3:
        body["messages"] = [
            {"role": "user", "content": body["task"]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": "search_flights", "arguments": json.dumps({"to": city, "month": 5})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{n}", "content": f"3 results; cheapest 48 EUR to {city}"},
            {"role": "assistant", "content": f"May 12, 48 EUR to {city}."},
        ]
    else:
        body["steps"] = [
            {
                "thought": f"Search step {s} for {city}.",
                "tool": "search_flights",
                "arguments": {"to": city, "page": s},
                "observation": f"page {s}: {3 + s} results, cheapest {40 + s} EUR",
            }
            for s in range(3 + n % 4)
        ]
        body["final_answer"] = f"May 12, 48 EUR to {city}."
    if n % 2 == 0:
        body["external_id"] = f"{tag}-{n}"
    if n % 3 == 0:
        body["retrieval_id"] = retrieval_ids[n % len(retrieval_ids)]
    if n % 5 == 0:
        body["outcome"] = "success"
    if n % 7 == 0:
        body["metadata"] = {"env": "bench", "attempt": n % 3}
    return body


def _queued_ids(folder: Path) -> tuple[list[int], int] | None:
    """The trajectory ids the tasks in the embedded broker of ``folder`` carry
    (``trajectories.process``: one; ``trajectories.process_many``: a batch's),
    and how many messages; None on another broker."""
    if os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL"):
        return None
    import redis

    from reasoningbank_site import embedded

    client = redis.Redis(unix_socket_path=str(embedded.broker_socket((folder / "broker").resolve())))
    ids, messages = [], 0
    for raw in client.lrange("celery", 0, -1):
        payload = json.loads(raw)
        args = json.loads(base64.b64decode(payload["body"]))[0]
        task = payload["headers"]["task"]
        assert task in ("trajectories.process", "trajectories.process_many"), task
        ids += args[0] if task == "trajectories.process_many" else [args[0]]
        messages += 1
    client.close()
    return ids, messages


def _wait_ready(base: str, workers: int) -> None:
    """Until /readyz answers 200 several times in a row: every worker has
    loaded the embedding model (its background load would compete with the timing)."""
    streak, deadline = 0, time.time() + 180
    while streak < 4 * workers:
        assert time.time() < deadline, "the web workers did not become ready within 180 s"
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=10) as response:
                streak = streak + 1 if response.status == 200 else 0
        except urllib.error.URLError:
            streak = 0
            time.sleep(0.5)


class Client:
    """One agent: a kept-alive HTTP connection."""

    def __init__(self, base: str, token: str):
        host, port = base.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=120)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def post(self, path: str, body: dict) -> tuple[int, dict, float]:
        data = json.dumps(body).encode()
        started = time.perf_counter()
        self.conn.request("POST", path, body=data, headers=self.headers)
        response = self.conn.getresponse()
        answer = json.loads(response.read())
        return response.status, answer, (time.perf_counter() - started) * 1000


def _run(clients: list[Client], jobs_per_client: list[list[dict]], path: str, held) -> tuple[float, list, list]:
    """Each client sends its jobs, all at once; returns the wall time, the
    answers and ``held()`` (connections per web worker) sampled every 0.5 s,
    the sample with the most connections: a client that is done early may see
    its idle connection closed by the server's keep-alive timeout."""

    def work(i: int) -> list:
        return [clients[i].post(path, body) for body in jobs_per_client[i]]

    seen: list[int] = []
    done = threading.Event()

    def sample() -> None:
        nonlocal seen
        while not done.wait(0.5):
            now = held()
            if sum(now) > sum(seen):
                seen = now

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=len(clients)) as pool:
            answers = [a for per_client in pool.map(work, range(len(clients))) for a in per_client]
        wall = time.perf_counter() - started
    finally:
        done.set()
        sampler.join()
    return wall, answers, seen


def _phase(server, base: str, token: str, retrieval_ids: list[str], tag: str, args, kind: str) -> dict:
    """One timed phase against one server: ``kind`` batch or single. Returns what was
    sent (for the database check), the timings and the CPU seconds spent (cpu_seconds);
    asserts every answer."""
    cpu_before = cpu_seconds(server)

    def held() -> list[int]:
        return connections_per_worker(server, base)

    if kind == "batch":
        per_client = args.batches * args.batch_size
        jobs = []
        for c in range(args.batch_clients):
            bodies = [trajectory(c * per_client + n, retrieval_ids, tag) for n in range(per_client)]
            jobs.append(
                [{"trajectories": bodies[i : i + args.batch_size]} for i in range(0, len(bodies), args.batch_size)]
            )
        wall, answers, spread = _run([Client(base, token) for _ in jobs], jobs, "/api/v1/trajectories/batch", held)
        for status, answer, _ms in answers:
            assert status == 200, (status, answer)
            assert answer["failed"] == 0 and answer["accepted"] == len(answer["results"]), answer
            assert all(r["ok"] and not r["duplicate"] for r in answer["results"]), answer
        n = args.batch_clients * per_client
    else:
        jobs = [
            [trajectory(c * args.singles + n, retrieval_ids, tag) for n in range(args.singles)]
            for c in range(args.single_clients)
        ]
        wall, answers, spread = _run([Client(base, token) for _ in jobs], jobs, "/api/v1/trajectories", held)
        for status, answer, _ms in answers:
            assert status == 202 and not answer["duplicate"], (status, answer)
        n = args.single_clients * args.singles
    cpu_after = cpu_seconds(server)
    return {
        "spread": spread,
        "rate": n / wall,
        "cpu": cpu_spent(cpu_before, cpu_after),
        "n": n,
        "wall": wall,
        "ms": [ms for _s, _a, ms in answers],
        "load1": os.getloadavg()[0],
        "with_retrieval": sum(1 for i in range(n) if i % 3 == 0),
        "outcomes": sum(1 for i in range(n) if i % 5 == 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-clients", type=int, default=8)
    parser.add_argument("--batches", type=int, default=10, help="batch requests per client and round")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--single-clients", type=int, default=12)
    parser.add_argument("--singles", type=int, default=50, help="single POSTs per client and round")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (each: batch, then single)")
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--workers", type=int, default=WORKERS, help="gunicorn workers (production's default)")
    parser.add_argument("--threads", type=int, default=THREADS, help="threads per worker (production's default)")
    parser.add_argument(
        "--compare-threads",
        type=int,
        default=None,
        metavar="N",
        help="serve the --compare side with N threads per worker (1: gunicorn's sync worker) instead of --threads",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="DIR",
        help="also serve the checkout in DIR (e.g. the code before a change) against the same database, "
        "rounds interleaved with this one's, and print both",
    )
    args = parser.parse_args()

    setup_django()
    from memories.serving.models import RetrievalEvent
    from trajectories.models import Judgment, Trajectory

    broker = Path(tempfile.mkdtemp(prefix="rb-bench-ingest-broker-"))
    tag = uuid.uuid4().hex[:6]
    servers = {"this": None, **({"compare": args.compare} if args.compare else {})}
    started, scenes, phases = {}, {}, {name: {"batch": [], "single": []} for name in servers}
    try:
        for name, root in servers.items():
            os.environ["RB_BROKER_DIR"] = str(broker / name)  # each server's tasks go to a folder of its own
            started[name] = start_server(
                port=args.port if name == "this" else None,
                workers=args.workers,
                threads=args.compare_threads if name == "compare" and args.compare_threads else args.threads,
                root=root,
            )
            scenes[name] = _seed()
        for name, (_proc, base) in started.items():
            _wait_ready(base, args.workers)
            _bank, token, retrieval_ids = scenes[name]
            warm = Client(base, token)
            for n in range(2 * args.workers):  # one request per worker before timing (imports, first connection)
                status, _answer, _ms = warm.post("/api/v1/trajectories", trajectory(n, retrieval_ids, f"{tag}-warm"))
                assert status == 202, status
        for r in range(args.rounds):
            for kind in ("batch", "single"):
                order = list(servers) if r % 2 == 0 else list(servers)[::-1]
                for name in order:
                    _bank, token, retrieval_ids = scenes[name]
                    server, base = started[name]
                    phases[name][kind].append(
                        _phase(server, base, token, retrieval_ids, f"{tag}-{kind}-{r}", args, kind)
                    )
        queued = {name: _queued_ids(broker / name) for name in servers}
    finally:
        for proc, _base in started.values():
            stop_server(proc)
        shutil.rmtree(broker, ignore_errors=True)

    warm_n = 2 * args.workers
    for name, root in servers.items():
        bank, _token, _ids = scenes[name]
        label = "this checkout" if root is None else str(root)
        threads = args.compare_threads if name == "compare" and args.compare_threads else args.threads
        label += f" ({args.workers}x{threads})"
        for kind in ("batch", "single"):
            runs = phases[name][kind]
            n, wall = sum(p["n"] for p in runs), sum(p["wall"] for p in runs)
            ms = [m for p in runs for m in p["ms"]]
            clients = args.batch_clients if kind == "batch" else args.single_clients
            size = f" batch_size={args.batch_size}" if kind == "batch" else ""
            loads = ",".join(f"{p['load1']:.1f}" for p in runs)
            spread = ",".join(f"{'/'.join(map(str, p['spread']))}:{p['rate']:.0f}" for p in runs)
            cpu = " ".join(
                f"{part}_cpu_ms={1000 * sum(p['cpu'][part] for p in runs) / n:.2f}" for part in runs[0]["cpu"]
            )
            print(
                f"{kind}: server={label} clients={clients}{size} trajectories={n} trajectories_per_s={n / wall:.0f} "
                f"request_p50_ms={pct(ms, 50):.1f} request_p99_ms={pct(ms, 99):.1f} "
                f"{cpu} connections_per_worker:rate={spread} load1={loads} cpus={os.cpu_count()}"
            )
        runs = phases[name]["batch"] + phases[name]["single"]
        sent = warm_n + sum(p["n"] for p in runs)
        with_retrieval = sum(1 for n in range(warm_n) if n % 3 == 0) + sum(p["with_retrieval"] for p in runs)
        outcomes = sum(1 for n in range(warm_n) if n % 5 == 0) + sum(p["outcomes"] for p in runs)
        stored = Trajectory.objects.filter(bank=bank).count()
        linked = sum(RetrievalEvent.objects.filter(bank=bank).values_list("linked", flat=True))
        judged = Judgment.objects.filter(trajectory__bank=bank, source="agent").count()
        print(f"stored: server={label} stored={stored} sent={sent} linked={linked} agent_judgments={judged}")
        assert stored == sent, f"{sent - stored} trajectories lost"
        assert linked == with_retrieval, f"retrievals count {linked} linked trajectories, expected {with_retrieval}"
        assert judged == outcomes, f"{judged} agent judgments, expected {outcomes}"
        if queued[name] is not None:
            pks = set(Trajectory.objects.filter(bank=bank).values_list("pk", flat=True))
            print(f"queued: server={label} messages={queued[name][1]} trajectories={len(queued[name][0])}")
            assert sorted(queued[name][0]) == sorted(pks), "the queued tasks are not one per stored trajectory"


if __name__ == "__main__":
    main()
