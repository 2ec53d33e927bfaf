"""Prometheus metrics at /metrics: request latency by route (the retrieve
route is ``api/v1/retrieve``), trajectories by state, the oldest trajectory
waiting in ``received``, and the embedding backlog.

Who may read them: with ``RB_METRICS_TOKEN`` set, a request carrying
``Authorization: Bearer <token>``; without it, only requests from this
machine (loopback). Anything else gets a 404, so the endpoint is not
advertised. Under gunicorn with several workers, set
``PROMETHEUS_MULTIPROC_DIR`` (an empty directory) so every worker's
request metrics are summed in each scrape."""

from __future__ import annotations

import hmac
import os
import time

from django.conf import settings
from django.db.models import Count, Min, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from memories.embeddings import embedding_model_name
from memories.models import ItemStatus, MemoryItem
from trajectories.models import Status, Trajectory

REQUEST_LATENCY = Histogram(
    "rb_http_request_duration_seconds",
    "Time to answer an HTTP request, by route pattern, method and status class.",
    ["route", "method", "status"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
LOOPBACK = {"127.0.0.1", "::1"}


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
        model = embedding_model_name()
        backlog = (
            MemoryItem.objects.filter(status__in=[ItemStatus.PROPOSED, ItemStatus.APPROVED])
            .filter(Q(embedding_hash="") | ~Q(embedding_model=model))
            .count()
        )
        yield GaugeMetricFamily(
            "rb_embedding_backlog", "Proposed and approved items without a current embedding.", value=backlog
        )


def _allowed(request: HttpRequest) -> bool:
    token = settings.RB_METRICS_TOKEN
    if token:
        sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        return hmac.compare_digest(sent.encode(), token.encode())
    return request.META.get("REMOTE_ADDR") in LOOPBACK


def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        raise Http404
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(_ProcessMetrics())
    registry.register(DatabaseCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


class _ProcessMetrics:
    """This process's own metrics (the default registry) inside a per-scrape registry."""

    def collect(self):
        yield from REGISTRY.collect()
