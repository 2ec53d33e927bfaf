"""Prometheus metrics of the LLM calls (``trajectories.pipeline.llm.chat``), by model
and purpose (judge, distill, matts, experiment): calls by outcome (ok, transient,
permanent), their latency, and the tokens the endpoint reported.

The calls happen in Celery worker processes; with ``PROMETHEUS_MULTIPROC_DIR``
set (``make run`` sets one; see reasoningbank_site.metrics) the web's
/metrics scrape sums every process's files. Those files are named by host
name, process id and a random part drawn once per process, not the process
id alone: containers sharing the directory on a volume each have a process
1, 7, …, and on the host's network they share its host name too; two
processes writing one file corrupt it, and the scrape fails.
reasoningbank_site.metrics imports this module first, so every process
(web or worker) names its files so before it creates a metric value."""

from __future__ import annotations

import functools
import os
import secrets
import socket
import time

from prometheus_client import Counter, Histogram, values

_HOST = socket.gethostname().replace("_", "-")  # prometheus-client splits its file names on "_"
_process_names: dict[int, str] = {}


def process_file_name() -> str:
    """This process's part of its metric files' names: the same for its lifetime, another in a forked child
    (prometheus-client asks again and again, and starts new files when the answer changes)."""
    pid = os.getpid()
    if pid not in _process_names:
        _process_names.clear()  # a forked child: the parent's name is not its own
        _process_names[pid] = f"{_HOST}-{pid}-{secrets.token_hex(4)}"
    return _process_names[pid]


if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    values.ValueClass = values.MultiProcessValue(process_file_name)

LLM_CALLS = Counter(
    "rb_llm_calls",
    "LLM chat completions by model, purpose and outcome (ok, transient, permanent).",
    ["model", "purpose", "outcome"],
)
LLM_LATENCY = Histogram(
    "rb_llm_call_duration_seconds",
    "Time an LLM chat completion took, answered or failed, by model and purpose.",
    ["model", "purpose"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300),
)
LLM_TOKENS = Counter(
    "rb_llm_tokens",
    "Tokens the LLM endpoint reported using (its usage field), by model, purpose and kind (prompt, completion).",
    ["model", "purpose", "kind"],
)


def llm_measured(*, transient: type[Exception], not_sent: type[Exception] | tuple = ()):
    """Decorates ``chat(*, model, purpose, ...)``: counts and times every call by its outcome —
    ``transient`` when it raised ``transient`` (LLMTransientError), ``permanent`` for any other error;
    a call refused before any request (``not_sent``: the daily budget's refusal) is not counted."""

    def decorate(chat):
        @functools.wraps(chat)
        def measured(*, model: str, purpose: str = "other", **kwargs):
            started = time.perf_counter()
            outcome = "permanent"
            try:
                answer = chat(model=model, purpose=purpose, **kwargs)
                outcome = "ok"
                return answer
            except transient:
                outcome = "transient"
                raise
            except not_sent:
                outcome = ""
                raise
            finally:
                if outcome:
                    LLM_LATENCY.labels(model, purpose).observe(time.perf_counter() - started)
                    LLM_CALLS.labels(model, purpose, outcome).inc()

        return measured

    return decorate


def llm_tokens_count(*, model: str, purpose: str, usage) -> None:
    """Adds the usage of one answer (an openai ``CompletionUsage``, or None when the endpoint sent none)."""
    for kind in ("prompt", "completion"):
        tokens = getattr(usage, f"{kind}_tokens", None)
        if isinstance(tokens, int) and tokens > 0:
            LLM_TOKENS.labels(model, purpose, kind).inc(tokens)
