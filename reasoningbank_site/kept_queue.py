"""Kept figures that a request never computes: a page that finds a big bank's figures missing (or is asked to
recompute them) queues their computation for a worker and shows a placeholder that polls for them.

- ``queue_once`` publishes a named Celery task once per kept key: a mark ``<key>:queued`` is added to Django's
  cache (``cache.add``: of ten readers at once, one queues) for QUEUED_SECONDS; whoever stores the figures
  clears it (``kept_store``, ``queued_clear``), and so does a publish that failed, so the next reader queues again.
- A page shows ``KeptFigures``: the kept (or just computed) figures, or none while a worker computes them
  (``pending``), and whether a recompute of the shown ones is queued (``recomputing``: ``kept_get`` reads the
  figures and their queued mark in one cache read, so every view and poll of the page knows).
- While it waits (pending or recomputing) the page shows a placeholder (templates/includes/kept_pending.html,
  beside the kept figures when recomputing) that polls the page's fragment, described by ``KeptPoll``
  (``kept_poll``). The fragment answers the placeholder again while the worker has not stored the figures, and
  the new figures, which end the poll, once it has. It waits from ``started`` (``poll_started``: a Unix time in
  the query string, or now when absent or nonsense) and gives up POLL_GIVE_UP_SECONDS after it
  (``poll_gave_up``), saying the workers may be busy or down and offering to check again.

The tasks run on the maintenance queue (reasoningbank_site.workers.TASK_QUEUES), beside beat's recomputes of
the same figures (reasoningbank_site.kept)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Generic, TypeVar

from django.core.cache import cache

from reasoningbank_site.celery import enqueue_on_commit

Figures = TypeVar("Figures")

QUEUED_SECONDS = 120
"""How long a queued computation stops another from being queued (whoever stores the figures clears it sooner)."""
POLL_GIVE_UP_SECONDS = 60
"""How long a page polls for figures being computed before it says the workers may be down."""


@dataclass(frozen=True)
class KeptFigures(Generic[Figures]):
    """What a page shows of its kept figures: the kept (or just computed) ones, or none while a worker computes
    them (``pending``); ``recomputing``: a recompute of the shown ones is queued."""

    figures: Figures | None
    pending: bool = False
    recomputing: bool = False


def _mark(key: str) -> str:
    return f"{key}:queued"


def queue_once(key: str, task_name: str, *args) -> bool:
    """Publish ``task_name(*args)`` (on commit) unless a computation of ``key`` was queued within QUEUED_SECONDS
    and is not done; returns whether this call queued it."""
    mark = _mark(key)
    if not cache.add(mark, 1, timeout=QUEUED_SECONDS):
        return False
    enqueue_on_commit(task_name, *args, on_failure=lambda: cache.delete(mark))
    return True


def kept_get(key: str) -> tuple[object | None, bool]:
    """The figures kept under ``key`` (None when none are) and whether a computation of them is queued and not
    done, in one read of the cache."""
    found = cache.get_many([key, _mark(key)])
    return found.get(key), _mark(key) in found


def queued_clear(key: str) -> None:
    """The figures of ``key`` were stored (or need not be): a reader may queue the next computation."""
    cache.delete(_mark(key))


def kept_store(key: str, figures, seconds: int) -> None:
    """Keep ``figures`` under ``key`` for ``seconds`` and clear its queued mark: what every computation of kept
    figures (beat's, a queued one, a small bank's view) does with what it computed."""
    cache.set(key, figures, seconds)
    queued_clear(key)


def poll_started(request) -> float:
    """When the page began waiting: the ``started`` query parameter (a Unix time, at most now), or now when it
    is absent or not a finite number."""
    now = time.time()
    try:
        started = min(now, float(request.GET.get("started", now)))
    except ValueError:
        return now
    return started if math.isfinite(started) else now


def poll_gave_up(started: float) -> bool:
    """Whether a page that began waiting at ``started`` has waited POLL_GIVE_UP_SECONDS."""
    return time.time() - started >= POLL_GIVE_UP_SECONDS


@dataclass(frozen=True)
class KeptPoll:
    """What a page's placeholder for its kept figures needs (templates/includes/kept_pending.html): whether
    none are shown while a worker computes them (``pending``) or the shown ones are being recomputed
    (``recomputing``), whether its poll gave up, the fragment it polls (``url``, with when the page began
    waiting) and the same fragment waiting afresh (``again_url``: "Check again")."""

    pending: bool
    recomputing: bool
    gave_up: bool
    url: str
    again_url: str


def kept_poll(url: str, *, pending: bool, recomputing: bool, started: float) -> KeptPoll:
    """The placeholder of a page's kept figures that polls ``url`` (the page's fragment, with its own query
    string if any) from ``started`` (a Unix time: now for the page, poll_started for the fragment)."""
    joined = f"{url}{'&' if '?' in url else '?'}started={int(started)}"
    gave_up = (pending or recomputing) and poll_gave_up(started)
    return KeptPoll(pending=pending, recomputing=recomputing, gave_up=gave_up, url=joined, again_url=url)
