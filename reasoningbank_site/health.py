"""Liveness and readiness for orchestrators and ``make run``.

``/healthz``: the process answers (no database, no broker) — restart it if not.
``/readyz``: database, broker (short timeout), the embedding model loaded in
this process, migrations applied — 200 when all pass, 503 otherwise (send it
no traffic yet). Each check runs under a hard deadline, so a frozen broker or
database makes /readyz answer 503, never hang. Each check's name, outcome,
reason and timing are in the answer only for those who may read /metrics
(its token, or loopback without one): the reasons name hosts and errors.
With a read replica configured, its state and lag are reported too (``replica``), but they never make
/readyz answer 503: the reports fall back to the primary when the replica is down."""

from __future__ import annotations

import threading
import time

from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from kombu import Connection

from memories.embedding import model as embeddings
from reasoningbank_site import replica
from reasoningbank_site.celery import app as celery_app
from reasoningbank_site.metrics import may_read_metrics
from reasoningbank_site.text import counted

CHECK_TIMEOUT = 2.0
# Migrations once applied stay applied for the life of the process (a new release restarts it).
_migrations_done = threading.Event()


class NotReady(Exception):
    pass


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _broker() -> str:
    conf = celery_app.conf
    options = {
        **(conf.broker_transport_options or {}),
        "socket_timeout": CHECK_TIMEOUT,
        "socket_connect_timeout": CHECK_TIMEOUT,
    }
    with Connection(conf.broker_url, connect_timeout=CHECK_TIMEOUT, transport_options=options) as broker:
        broker.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=CHECK_TIMEOUT)
        client = getattr(broker.default_channel, "client", None)
        if hasattr(client, "ping"):  # Redis: a frozen server accepts the TCP connection but never answers
            client.ping()
    return "ok"


def _embedding_model() -> str:
    if embeddings.model_is_loaded():
        return "ok"
    embeddings.preload()  # a process that did not preload (runserver) starts now
    error = embeddings.model_load_error()
    raise NotReady(f"cannot load: {error}" if error else "loading")


def _migrations() -> str:
    if not _migrations_done.is_set():
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if pending:
            raise NotReady(f"{counted(len(pending), 'migration')} not applied")
        _migrations_done.set()
    return "ok"


def _replica() -> dict:
    status = replica.replica_status()
    state = {"state": "paused" if status["replay_paused"] else "streaming", **status}
    return {**state, **replica.judge_lag(status["lag_seconds"])}  # where the reports read, and why


CHECKS = {"database": _database, "broker": _broker, "embedding_model": _embedding_model, "migrations": _migrations}
# Reported, never required: a replica that is down or behind does not stop the primary's traffic.
OPTIONAL_CHECKS = {"replica": _replica}


def _checks() -> dict:
    return {**CHECKS, **(OPTIONAL_CHECKS if replica.replica_configured() else {})}


def _run_all() -> dict[str, dict]:
    """Every check in its own thread, all under one hard deadline: {name: {"ok", "detail", "ms"}}."""
    outcomes: dict[str, dict] = {}
    threads = []
    started = time.monotonic()

    def run(name, check) -> None:
        try:
            detail, ok = check(), True
        except Exception as exc:  # every failure is a "not ready" with its reason
            detail, ok = str(exc)[:300] or type(exc).__name__, False
        finally:
            connections.close_all()  # the thread's own connections
        outcomes[name] = {"ok": ok, "detail": detail, "ms": round((time.monotonic() - started) * 1000, 1)}

    checks = _checks()
    for name, check in checks.items():
        thread = threading.Thread(target=run, args=(name, check), name=f"readyz-{name}", daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join(max(CHECK_TIMEOUT + 0.5 - (time.monotonic() - started), 0))
    late = {"ok": False, "detail": f"no answer within {CHECK_TIMEOUT:g} s", "ms": None}
    return {name: dict(outcomes.get(name) or late) for name in checks}


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "alive"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    results = _run_all()
    ready = all(result["ok"] for name, result in results.items() if name not in OPTIONAL_CHECKS)
    answer: dict = {"status": "ready" if ready else "not ready"}
    if may_read_metrics(request):
        answer["checks"] = results
    return JsonResponse(answer, status=200 if ready else 503)
