"""Recovery times on the production topology: the processes of
tests/production/topology.py (PostgreSQL via DATABASE_URL, redis-server,
migrate as its own step, gunicorn with 2 workers, two Celery workers, beat, a
fake LLM), the same faults as tests/production, timed:

- Redis frozen then stopped while agents POST, then started again: from Redis
  back to every trajectory done;
- PostgreSQL stopped, then started: from PostgreSQL accepting connections to
  the API's first 2xx;
- a worker SIGKILLed inside an LLM call, then started again: from the restart
  to the worker ready, and to the trajectory done.

Every trajectory is asserted done with one LLM judgment and the fake LLM's two
items (the real work happened). The sweeper settings of the harness
(RB_PIPELINE_STALE_SECONDS, RB_SWEEP_INTERVAL_SECONDS) bound the Redis and
worker figures; they are printed with the load average.

    RB_DATA_DIR=/tmp/rb-bench .venv/bin/python bench/recovery.py --trajectories 10
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.production.topology import FAST_ENV, Topology, wait_until

ITEMS = 2  # tests.trajectories.llm_answers.ITEMS_MD proposes two items


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _check_done(finals: dict[str, dict]) -> None:
    for final in finals.values():
        assert final["status"] == "done", final
        assert [j["source"] for j in final["judgments"]] == ["llm"], final
        # New proposals, or supporting evidence on items already proposed in this bench database (consolidation).
        assert len(final["items"]) + len(final["supported_items"]) == ITEMS, final


def redis_recovery(top: Topology, n: int) -> dict[str, float]:
    marker = uuid.uuid4().hex[:8]
    ids, post_times = [], []
    with top.client() as api:
        top.redis.freeze()
        try:
            for i in range(n // 2):
                started = time.monotonic()
                response = api.post("/trajectories", json=top.trajectory_body(f"Redis frozen {i} ({marker})"))
                post_times.append(time.monotonic() - started)
                assert response.status_code == 202, response.text
                ids.append(response.json()["id"])
        finally:
            top.redis.stop()
        for i in range(n // 2, n):
            started = time.monotonic()
            response = api.post("/trajectories", json=top.trajectory_body(f"Redis stopped {i} ({marker})"))
            post_times.append(time.monotonic() - started)
            assert response.status_code == 202, response.text
            ids.append(response.json()["id"])
        top.redis.start()
        back = time.monotonic()
        _check_done(top.wait_finished(api, ids, timeout=300))
        return {"redis_back_to_all_done_s": time.monotonic() - back, "slowest_post_during_outage_s": max(post_times)}


def postgres_recovery(top: Topology) -> dict[str, float]:
    with top.client() as api:
        response = api.post("/trajectories", json=top.trajectory_body("Before the database restart"))
        assert response.status_code == 202, response.text
        probe = f"/trajectories/{response.json()['id']}"
        top.postgres.stop()
        down = api.get(probe)
        assert down.status_code == 503, down.text
        top.postgres.start()  # returns once PostgreSQL accepts connections
        back = time.monotonic()
        wait_until(lambda: api.get(probe).status_code == 200, timeout=60, what="the first 2xx", interval=0.05)
        return {"postgres_back_to_first_2xx_s": time.monotonic() - back}


def worker_recovery(top: Topology) -> dict[str, float]:
    marker = uuid.uuid4().hex[:8]
    top.llm.hold(marker)
    with top.client() as api:
        response = api.post("/trajectories", json=top.trajectory_body(f"Worker killed mid-call ({marker})"))
        assert response.status_code == 202, response.text
        trajectory_id = response.json()["id"]
        assert top.llm.held.wait(60), "no worker called the LLM"
        victim = wait_until(lambda: top.worker_holding_port(top.llm.held_peer_port), timeout=10, what="the worker")
        victim.kill()
        top.llm.release()
        restarted = time.monotonic()
        top.restart_worker(victim)
        ready = time.monotonic() - restarted
        _check_done(top.wait_finished(api, [trajectory_id], timeout=300))
        return {"worker_restart_to_ready_s": ready, "worker_restart_to_task_done_s": time.monotonic() - restarted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=int, default=10, help="POSTed during the Redis outage")
    args = parser.parse_args()
    print(f"harness: {', '.join(f'{k}={v}' for k, v in FAST_ENV.items())}")
    print(f"machine: {os.cpu_count()} cores, {_load()}")
    with Topology() as top:
        print(f"started: {top.timings} ({_load()})")
        with top.client() as api:  # warm: one trajectory through the whole pipeline
            response = api.post("/trajectories", json=top.trajectory_body("Warm-up"))
            _check_done(top.wait_finished(api, [response.json()["id"]], timeout=300))
        results = {}
        for name, run in [
            ("redis", lambda: redis_recovery(top, args.trajectories)),
            ("postgres", lambda: postgres_recovery(top)),
            ("worker", lambda: worker_recovery(top)),
        ]:
            figures = run()
            results.update(figures)
            print(f"{name}: " + " ".join(f"{k}={v:.2f}" for k, v in figures.items()) + f" ({_load()})", flush=True)
    print("summary: " + " ".join(f"{k}={v:.2f}" for k, v in results.items()))


if __name__ == "__main__":
    main()
