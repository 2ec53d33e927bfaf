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

# Tasks routed by name (beat's tasks, beat_schedule's, go to MAINTENANCE; everything else to PIPELINE).
TASK_QUEUES: dict[str, str] = {
    "accounts.webhook_deliver": WEBHOOKS,
    "trajectories.experiment_run": BULK,
    "memories.release_import": BULK,
    # A reader's queued Impact per-item table: housekeeping-sized work, beside beat's recomputes of them.
    "trajectories.impact_item_table": MAINTENANCE,
    # A reader's queued dashboard report or reviewers page figures, likewise (reasoningbank_site.kept_queue).
    "trajectories.dashboard_report": MAINTENANCE,
    "trajectories.reviewer_report": MAINTENANCE,
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


def beat_schedule(*, sweep_interval: float, dispatch_interval: float) -> dict:
    """Beat's periodic tasks (CELERY_BEAT_SCHEDULE), every one routed to MAINTENANCE; the two intervals
    that settings reads from the environment (RB_SWEEP_INTERVAL_SECONDS, RB_DISPATCH_INTERVAL)."""
    return {
        # Re-enqueues work a crash left behind, resumes awaiting_llm, closes expired MaTTS groups.
        "trajectories-sweep": {"task": "trajectories.sweep", "schedule": sweep_interval},
        # Embeds items whose embed job was lost (e.g. the broker was down when they changed).
        "memories-embed-pending": {"task": "memories.embed_pending", "schedule": 300.0},
        # Folds logged retrievals into the items' served counters (kept off the retrieve request).
        "memories-count-served": {"task": "memories.count_served", "schedule": 10.0},
        # Merges the Impact report's appended sums (exact either way; merged rows keep the report fast).
        "memories-compact-tallies": {"task": "memories.compact_tallies", "schedule": 60.0},
        # Folds per-minute token usage older than 48 h into daily rows (totals stay exact).
        "accounts-compact-token-usage": {"task": "accounts.compact_token_usage", "schedule": 3600.0},
        # Purges the steps of finished trajectories past their bank's step_retention_days (personal data).
        "trajectories-purge-steps": {"task": "trajectories.purge_steps", "schedule": 3600.0},
        # Publishes trajectories whose publish at ingest failed (the row is the queue entry).
        "trajectories-dispatch": {"task": "trajectories.dispatch", "schedule": dispatch_interval},
        # Re-sends webhook deliveries whose queued attempt was lost (broker down, worker gone).
        "accounts-webhooks-sweep": {"task": "accounts.webhooks_sweep", "schedule": 60.0},
        # Sends impact.verdict to the subscriptions whose bank's Impact verdict changed.
        "trajectories-webhook-verdicts": {"task": "trajectories.webhook_verdicts", "schedule": 300.0},
        # Recomputes the Impact page's per-item tables of big banks whose sums changed (kept in the cache).
        "trajectories-impact-item-tables": {"task": "trajectories.impact_item_tables", "schedule": 60.0},
        # Recomputes the dashboard reports of big banks viewed in the last hour, before they expire.
        "trajectories-dashboard-reports": {"task": "trajectories.dashboard_reports", "schedule": 60.0},
        # Writes Impact's per-item effects on items (utility ranking) and proposes harmful items for retirement.
        "trajectories-item-effects": {"task": "trajectories.item_effects", "schedule": 600.0},
        # Recalibrates the anomaly score of banks whose approved items changed by more than 10 % (or a day ago).
        "memories-anomaly-recalibrate": {"task": "memories.anomaly_recalibrate", "schedule": 600.0},
        # Rolls back canary releases significantly worse than production (banks that opted in).
        "trajectories-canary-rollback": {"task": "trajectories.canary_rollback", "schedule": 300.0},
        # Merges the dashboard's trajectory counts per key (exact either way; merged rows keep its reads small).
        "trajectories-compact-counts": {"task": "trajectories.compact_counts", "schedule": 60.0},
    }
