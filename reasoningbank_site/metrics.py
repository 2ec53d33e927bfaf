"""Prometheus metrics at /metrics: request latency by route (the retrieve
route is ``api/v1/retrieve``: its latency is that route's), trajectories by
state, the oldest trajectory waiting in ``received`` and in each state that
waits, the embedding backlog, the broker's queue depth, the LLM calls
(trajectories.pipeline.llm_metrics: calls by outcome, latency, tokens), and
each bank's LLM tokens and estimated cost per stage, read from the database.

Who may read them: with ``RB_METRICS_TOKEN`` set, a request carrying
``Authorization: Bearer <token>``; without it, only requests from this
machine (loopback). Anything else gets a 404, so the endpoint is not
advertised. The LLM calls happen in Celery workers, and gunicorn
runs several web workers: set ``PROMETHEUS_MULTIPROC_DIR`` to one directory,
shared by the web and worker processes of a host and emptied before they
start, so each scrape sums every process's metrics (``make run`` does:
``multiprocess_dir_prepare``)."""

from __future__ import annotations

import contextlib
import hmac
import os
import threading
import time
from pathlib import Path

from django.conf import settings
from django.db.models import Count, Min, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from memories.embedding.model import embedding_model_name
from memories.items.models import ItemStatus, MemoryItem
from reasoningbank_site.celery import app as celery_app
from trajectories.dashboard.llm_usage import llm_usage_by_bank
from trajectories.models import Status, Trajectory

REQUEST_LATENCY = Histogram(
    "rb_http_request_duration_seconds",
    "Time to answer an HTTP request, by route pattern, method and status class.",
    ["route", "method", "status"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
LOOPBACK = {"127.0.0.1", "::1"}
# The states a trajectory waits in (for a worker, an LLM endpoint, its distillation, the rest of its group).
WAITING_STATES = (Status.RECEIVED, Status.AWAITING_LLM, Status.JUDGED, Status.WAITING_GROUP)
# A scrape gives up on the broker after this long: a frozen broker must not hang it.
BROKER_TIMEOUT = 1.0


class RequestMetricsMiddleware:
    """Times every request under its URL pattern (never the raw path: ids would explode the label set)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = (match.route if match else "") or "unmatched"
        REQUEST_LATENCY.labels(route, request.method, f"{response.status_code // 100}xx").observe(
            time.perf_counter() - started
        )
        return response


class DatabaseCollector:
    """Gauges read from the database at scrape time (this is a read path: two aggregate queries)."""

    def collect(self):
        by_state = GaugeMetricFamily("rb_trajectories", "Trajectories by pipeline state.", labels=["state"])
        counts = dict(Trajectory.objects.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
        for state in Status.values:
            by_state.add_metric([state], counts.get(state, 0))
        yield by_state
        oldest = Trajectory.objects.filter(status=Status.RECEIVED).aggregate(first=Min("updated_at"))["first"]
        yield GaugeMetricFamily(
            "rb_oldest_received_age_seconds",
            "Age of the oldest trajectory waiting to be picked up (0 when none).",
            value=(timezone.now() - oldest).total_seconds() if oldest else 0,
        )
        oldest_by_state = dict(
            Trajectory.objects.filter(status__in=WAITING_STATES)
            .values_list("status")
            .annotate(first=Min("updated_at"))
            .values_list("status", "first")
        )
        waiting = GaugeMetricFamily(
            "rb_oldest_waiting_age_seconds",
            "Time since the oldest trajectory in each waiting state entered it (0 when none).",
            labels=["state"],
        )
        now = timezone.now()
        for state in WAITING_STATES:
            first = oldest_by_state.get(state)
            waiting.add_metric([state], (now - first).total_seconds() if first else 0)
        yield waiting
        model = embedding_model_name()
        backlog = (
            MemoryItem.objects.filter(status__in=[ItemStatus.PROPOSED, ItemStatus.APPROVED])
            .filter(Q(embedding_hash="") | ~Q(embedding_model=model))
            .count()
        )
        yield GaugeMetricFamily(
            "rb_embedding_backlog", "Proposed and approved items without a current embedding.", value=backlog
        )


class BankLLMUsageCollector:
    """Each bank's LLM tokens and estimated cost per stage, summed from the usage rows at scrape time
    (so every process's calls count, and a restart loses nothing). Labelled "team/bank" by slug: a
    handful of series per bank that has called the LLM, none for the others."""

    def collect(self):
        tokens = CounterMetricFamily(
            "rb_bank_llm_tokens",
            "LLM tokens the endpoint reported for a bank's calls, by stage and kind (prompt, completion).",
            labels=["bank", "stage", "kind"],
        )
        cost = CounterMetricFamily(
            "rb_bank_llm_cost_usd",
            "Estimated cost in USD of a bank's LLM calls by stage, at the current RB_LLM_PRICES; "
            "models without a price are left out (no series when none has one).",
            labels=["bank", "stage"],
        )
        for usage in llm_usage_by_bank():
            tokens.add_metric([usage.bank, usage.stage, "prompt"], usage.prompt_tokens)
            tokens.add_metric([usage.bank, usage.stage, "completion"], usage.completion_tokens)
            if usage.cost is not None:
                cost.add_metric([usage.bank, usage.stage], usage.cost)
        yield tokens
        yield cost


def _queue_names() -> list[str]:
    """The Celery queues tasks go to: the default one, the declared ones, and those named in task routes."""
    conf = celery_app.conf
    names = {conf.task_default_queue}
    names.update(queue.name for queue in conf.task_queues or ())
    routes = conf.task_routes
    for route in routes.values() if isinstance(routes, dict) else ():
        if isinstance(route, dict) and route.get("queue"):
            names.add(str(route["queue"]))
    return sorted(names)


def _queue_depths(names: list[str]) -> dict[str, int]:
    """Messages waiting in each queue, as the broker counts them (Redis and the embedded Valkey: LLEN)."""
    conf = celery_app.conf
    options = {
        **(conf.broker_transport_options or {}),
        "socket_timeout": BROKER_TIMEOUT,
        "socket_connect_timeout": BROKER_TIMEOUT,
    }
    with celery_app.connection_for_read(connect_timeout=BROKER_TIMEOUT, transport_options=options) as broker:
        broker.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT)
        channel = broker.default_channel
        size = getattr(channel, "_size", None)  # kombu's Redis transport counts directly
        return {
            name: size(name) if size else channel.queue_declare(queue=name, passive=True).message_count
            for name in names
        }


class QueueCollector:
    """The broker's queue depth at scrape time, read under a hard deadline: an unreachable or frozen broker
    yields ``rb_broker_up 0`` and no depth, never a hung scrape."""

    def collect(self):
        names = _queue_names()
        found: dict[str, int] = {}

        def read() -> None:
            with contextlib.suppress(Exception):  # the broker down or refusing: reported as not up
                found.update(_queue_depths(names))

        reader = threading.Thread(target=read, name="metrics-queue-depth", daemon=True)
        reader.start()
        reader.join(BROKER_TIMEOUT + 0.5)
        depths = dict(found)
        yield GaugeMetricFamily(
            "rb_broker_up",
            "1 when the broker answered this scrape's queue-depth read in time.",
            value=int(bool(depths)),
        )
        depth = GaugeMetricFamily("rb_queue_depth", "Messages waiting in each Celery queue.", labels=["queue"])
        for name, count in sorted(depths.items()):
            depth.add_metric([name], count)
        yield depth


def multiprocess_dir_prepare(data_dir: Path) -> dict[str, str]:
    """For ``make run``: the environment giving its processes one metrics
    directory (PROMETHEUS_MULTIPROC_DIR, by default ``<data dir>/metrics``),
    its metric files removed first so the counters of a previous run do not add up."""
    folder = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or data_dir / "metrics")
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):  # prometheus-client's files only: the directory may be the user's
        stale.unlink(missing_ok=True)
    return {"PROMETHEUS_MULTIPROC_DIR": str(folder)}


def may_read_metrics(request: HttpRequest) -> bool:
    """The token when RB_METRICS_TOKEN is set, else a request from this machine (/readyz's details too)."""
    token = settings.RB_METRICS_TOKEN
    if token:
        sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        return hmac.compare_digest(sent.encode(), token.encode())
    return request.META.get("REMOTE_ADDR") in LOOPBACK


def metrics(request: HttpRequest) -> HttpResponse:
    if not may_read_metrics(request):
        raise Http404
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(_ProcessMetrics())
    registry.register(DatabaseCollector())
    registry.register(BankLLMUsageCollector())
    registry.register(QueueCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


class _ProcessMetrics:
    """This process's own metrics (the default registry) inside a per-scrape registry."""

    def collect(self):
        yield from REGISTRY.collect()
