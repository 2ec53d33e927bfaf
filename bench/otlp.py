"""OTLP ingestion benchmark: spans/s through POST /api/v1/otel/v1/traces,
and the time from a root span's export to its trajectory being made.

    python bench/otlp.py [--traces 200] [--clients 4] [--batch 512] [--latency-traces 40]

Spans are made by the real OpenTelemetry SDK (8 per trace: invoke_agent, two
chats with GenAI semconv messages, two execute_tool spans, one failing, and
three HTTP client spans that are not agent work) and sent by the real
``OTLPSpanExporter`` (protobuf) to gunicorn (2 workers × 4 threads) on
loopback, as a BatchSpanProcessor would: batches of ``--batch`` spans in
end order, from ``--clients`` exporters at once. A real Celery worker closes
the traces (a root span's export queues the close), on a broker folder of
this run's own.

* **throughput**: every span of ``--traces`` traces; spans/s = spans sent ÷
  wall time of the exports. Asserts every export succeeded, then waits for
  one trajectory per trace and an empty buffer.
* **root → trajectory**: for ``--latency-traces`` traces the children are
  exported first, then the root span alone; the delay runs from the root's
  export until its trajectory exists (the worker's close), polled every 5 ms.
  Also prints the export request's own time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from common import ROOT, pct, setup_django, start_server, stop_server

from tests.harness import TimedOut, wait_until

PATH = "/api/v1/otel/v1/traces"
# user, then per chat: thought + tool_call, and the tool's result (the second one an error)
STEPS_PER_TRACE = 7


def _record(tracer, n: int) -> None:
    """One agent run (8 spans) as GenAI semconv instrumentations record it."""
    from opentelemetry.trace import SpanKind, Status, StatusCode

    task = f"Book a table for {n % 6 + 2} on Saturday (run {n})"
    user = [{"role": "user", "parts": [{"type": "text", "content": task}]}]
    with tracer.start_as_current_span(
        "invoke_agent booker",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "booker",
            "gen_ai.input.messages": json.dumps(user),
        },
    ):
        for step, (tool, result) in enumerate((("search", "4 restaurants free"), ("book", None))):
            call = {"type": "tool_call", "id": f"c{step}", "name": tool, "arguments": {"n": n}}
            with (
                tracer.start_as_current_span(
                    "chat gpt-4o",
                    kind=SpanKind.CLIENT,
                    attributes={
                        "gen_ai.operation.name": "chat",
                        "gen_ai.input.messages": json.dumps(user),
                        "gen_ai.output.messages": json.dumps(
                            [{"role": "assistant", "parts": [{"type": "text", "content": f"Step {step}."}, call]}]
                        ),
                        "gen_ai.usage.input_tokens": 200,
                        "gen_ai.usage.output_tokens": 40,
                    },
                ),
                tracer.start_as_current_span("POST", kind=SpanKind.CLIENT, attributes={"http.request.method": "POST"}),
            ):
                pass
            with tracer.start_as_current_span(
                f"execute_tool {tool}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.id": f"c{step}",
                    "gen_ai.tool.call.arguments": json.dumps({"n": n}),
                    **({"gen_ai.tool.call.result": result} if result else {}),
                },
            ) as span:
                if result is None:
                    span.set_status(Status(StatusCode.ERROR, "fully booked"))
        with tracer.start_as_current_span("GET", kind=SpanKind.CLIENT, attributes={"http.request.method": "GET"}):
            pass


def _spans(traces: int):
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "bench-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    for n in range(traces):
        _record(tracer, n)
    return list(memory.get_finished_spans())  # in end order: each root after its children


def _exporter(base: str, token: str):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=base + PATH, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--latency-traces", type=int, default=40)
    args = parser.parse_args()

    os.environ["RB_BROKER_DIR"] = tempfile.mkdtemp(prefix="rb-bench-otlp-broker-")
    setup_django()
    from opentelemetry.sdk.trace.export import SpanExportResult

    from tests import factories
    from trajectories.models import Trajectory
    from trajectories.otlp.models import TraceSpan

    team = factories.make_team(slug=f"otlp-{uuid.uuid4().hex[:6]}")
    bank = factories.make_bank(team=team, slug="agents", rate_limit_per_minute=0)
    token = factories.make_token(bank)
    proc, base = start_server(workers=2, threads=4)
    worker = subprocess.Popen(
        [
            *(sys.executable, "-m", "celery", "-A", "reasoningbank_site", "worker", "--loglevel", "WARNING"),
            *("--concurrency", "2", "--hostname", f"otlp-{uuid.uuid4().hex[:6]}@%h"),
        ],
        cwd=ROOT,
        env={**os.environ, "LOG_LEVEL": "WARNING"},
    )

    def wait_for(condition, what: str, timeout: float = 300.0):
        try:
            wait_until(condition, timeout=timeout, interval=0.005, what=what)
        except TimedOut as exc:
            raise SystemExit(str(exc)) from None

    try:
        # --- throughput ---
        spans = _spans(args.traces)
        # Each client is one agent process with its own exporter: it sends its own traces, in end order.
        traces = list(dict.fromkeys(s.context.trace_id for s in spans))
        owner = {trace_id: i % args.clients for i, trace_id in enumerate(traces)}
        lanes = []
        for client in range(args.clients):
            mine = [s for s in spans if owner[s.context.trace_id] == client]
            lanes.append([mine[i : i + args.batch] for i in range(0, len(mine), args.batch)])
        batches = [b for lane in lanes for b in lane]

        def send(lane):
            exporter = _exporter(base, token)
            return [exporter.export(batch) for batch in lane]

        started = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            results = [r for lane in pool.map(send, lanes) for r in lane]
        elapsed = time.perf_counter() - started
        assert all(r == SpanExportResult.SUCCESS for r in results), results
        made = Trajectory.objects.filter(bank=bank, input_format="otlp")
        wait_for(lambda: made.count() == args.traces, f"{args.traces} trajectories")
        wait_for(lambda: not TraceSpan.objects.filter(bank=bank).exists(), "an empty span buffer")
        assert set(made.values_list("step_count", flat=True)) == {STEPS_PER_TRACE}
        left = TraceSpan.objects.filter(bank=bank).count()
        print(
            f"throughput: {len(spans)} spans ({args.traces} traces × {len(spans) // args.traces}) in "
            f"{len(batches)} exports of ≤{args.batch} from {args.clients} clients: {elapsed:.2f} s, "
            f"{len(spans) / elapsed:.0f} spans/s, {args.traces / elapsed:.1f} traces/s; buffer left: {left} spans"
        )

        # --- root export → trajectory made ---
        latency_spans = _spans(args.latency_traces)
        exporter = _exporter(base, token)
        by_trace: dict[int, list] = {}
        for span in latency_spans:
            by_trace.setdefault(span.context.trace_id, []).append(span)
        delays, requests = [], []
        for trace_id, trace_spans in by_trace.items():
            root = next(s for s in trace_spans if s.parent is None)
            assert exporter.export([s for s in trace_spans if s is not root]) == SpanExportResult.SUCCESS
            before = time.perf_counter()
            assert exporter.export([root]) == SpanExportResult.SUCCESS
            requests.append((time.perf_counter() - before) * 1000)
            made_one = Trajectory.objects.filter(bank=bank, external_id=f"{trace_id:032x}")
            wait_for(made_one.exists, f"trace {trace_id:032x}")
            delays.append((time.perf_counter() - before) * 1000)
            trajectory = made_one.get()
            assert trajectory.step_count == STEPS_PER_TRACE and trajectory.status in (
                "received",
                "awaiting_llm",
                "judging",
            ), (
                trajectory.step_count,
                trajectory.status,
            )
        print(
            f"root span export → trajectory made ({len(delays)} traces): p50 {pct(delays, 50):.1f} ms, "
            f"p95 {pct(delays, 95):.1f} ms, mean {statistics.mean(delays):.1f} ms; "
            f"the export request alone: p50 {pct(requests, 50):.1f} ms"
        )
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        stop_server(proc)


if __name__ == "__main__":
    main()
