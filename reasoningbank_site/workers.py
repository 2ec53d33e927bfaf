"""The Celery queues, which tasks go to which, and the worker processes that
consume them. Every place that starts workers starts one per role here:
`make run` (rb_run), the compose file and the Kubernetes manifests (through
docker/entrypoint.sh's WORKER_QUEUES / WORKER_POOL / WORKER_CONCURRENCY), the
real-worker test fixtures and the benches.

- ``celery`` (the default queue): the pipeline (judge, distill, embed, dispatch).
- ``maintenance``: beat's housekeeping, so it never waits behind a pipeline backlog.
- ``webhooks``: webhook deliveries. An attempt may wait on a slow receiver for up to
  RB_WEBHOOK_TIMEOUT; a pool of threads of their own keeps them from holding a pipeline slot.
- ``bulk``: one tenant's big jobs (judge experiments, release imports), in a process of their
  own, so one team's import or experiment never holds another team's judging.

No Django here: settings imports it."""

from __future__ import annotations

import sys
from dataclasses import dataclass

PIPELINE = "celery"
MAINTENANCE = "maintenance"
WEBHOOKS = "webhooks"
BULK = "bulk"
QUEUES = (PIPELINE, MAINTENANCE, WEBHOOKS, BULK)

# Tasks routed by name (beat's tasks go to MAINTENANCE; everything else to PIPELINE).
TASK_QUEUES: dict[str, str] = {
    "accounts.webhook_deliver": WEBHOOKS,
    "trajectories.experiment_run": BULK,
    "memories.release_import": BULK,
}


@dataclass(frozen=True)
class WorkerRole:
    name: str
    queues: tuple[str, ...]
    pool: str  # Celery's: prefork (each pool process loads the embedding model), threads for I/O, solo
    concurrency: int


PIPELINE_WORKER = WorkerRole("worker", (PIPELINE, MAINTENANCE), "prefork", 2)
# I/O-bound: threads wait on receivers, not the CPU (each keeps one database connection).
WEBHOOK_WORKER = WorkerRole("webhook-worker", (WEBHOOKS,), "threads", 8)
# One task at a time; solo runs it in the worker's own process (one process, about 130 MB less than a
# main process beside one pool process). Compose and the manifests run prefork, 1 process.
BULK_WORKER = WorkerRole("bulk-worker", (BULK,), "solo", 1)
ROLES = (PIPELINE_WORKER, WEBHOOK_WORKER, BULK_WORKER)


def worker_argv(role: WorkerRole, *, loglevel: str, hostname: str, pool: str = "", concurrency: int = 0) -> list[str]:
    """The command line of a worker of ``role`` (``pool`` and ``concurrency`` override the role's)."""
    return [
        *[sys.executable, "-m", "celery", "-A", "reasoningbank_site", "worker"],
        *["--queues", ",".join(role.queues), "--pool", pool or role.pool],
        *["--concurrency", str(concurrency or role.concurrency), "--loglevel", loglevel, "--hostname", hostname],
    ]
