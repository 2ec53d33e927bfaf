"""The Celery app, and ``enqueue_on_commit``: how services hand work to a
worker without importing any task module (tasks import services, never the
other way round)."""

import functools
import logging
import os
import threading
import time
from collections.abc import Callable

from celery import Celery
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank_site.settings")

log = logging.getLogger(__name__)

app = Celery("reasoningbank")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


_discovery = threading.Lock()
# After a failed publish, this process leaves new tasks to the dispatcher and the sweeper until this
# monotonic time, so a batch of N trajectories does not wait N publish timeouts on a dead broker.
_broker_down_until = {"until": 0.0}


def db_outage_retry() -> dict:
    """Task options for work that must survive a database outage: a task that cannot reach
    the database is retried with backoff (RB_DB_RETRY_BACKOFF, capped at
    RB_DB_RETRY_BACKOFF_MAX), never acked and discarded."""
    return {
        "autoretry_for": (OperationalError, InterfaceError),
        "retry_backoff": settings.RB_DB_RETRY_BACKOFF,
        "retry_backoff_max": settings.RB_DB_RETRY_BACKOFF_MAX,
        "retry_jitter": False,
        "max_retries": None,
    }


def _registered_task(name: str):
    if name not in app.tasks:
        # Autodiscovery is lazy: a web process has not imported the apps' task modules yet.
        # One thread imports them; the others wait (concurrent imports saw a half-filled registry).
        with _discovery:
            if name not in app.tasks:
                app.loader.import_default_modules()
    return app.tasks[name]


def _not_sent(on_failure: Callable[[], object] | None) -> None:
    if on_failure is not None:
        try:
            on_failure()
        except Exception:
            log.exception("the failure hook of an unsent task failed")


def _publish(task, args: tuple) -> None:
    task.apply_async(args)  # eager mode (task_always_eager): runs inline


def _send(task_name: str, args: tuple, on_failure: Callable[[], object] | None) -> None:
    """Publish one task, found by its registered name, with Celery's own
    ``apply_async`` (what ``delay_on_commit`` calls), on a connection of the
    app's pool (kept between publishes; Celery replaces it after a fork). The settings
    bound it: every socket operation gives up after RB_BROKER_PUBLISH_TIMEOUT,
    a connect is one attempt, and the publish is retried once at once on a new
    connection (a kept one the broker closed). A failure is logged and never
    raised: its row is committed, ``on_failure`` marks it for the dispatcher,
    and for RB_BROKER_RETRY_AFTER seconds this process publishes nothing."""
    if time.monotonic() < _broker_down_until["until"]:
        log.warning("broker recently unreachable: not enqueuing %s%r; the sweeper will pick it up", task_name, args)
        _not_sent(on_failure)
        return
    try:
        _publish(_registered_task(task_name), args)
    except Exception:
        _broker_down_until["until"] = time.monotonic() + settings.RB_BROKER_RETRY_AFTER
        log.exception("could not enqueue %s%r; the sweeper will pick it up", task_name, args)
        _not_sent(on_failure)


def enqueue_on_commit(task_name: str, *args, on_failure: Callable[[], object] | None = None) -> None:
    """Publish the task registered as ``task_name`` with ``args`` once the
    current transaction commits (at once outside a transaction), as Celery's
    ``delay_on_commit`` does, but by name: services import no task module.
    Django's ``transaction.on_commit`` holds it, so a task enqueued in a
    savepoint that rolls back is never published. Eager mode
    (``task_always_eager``) runs it inline. A broker error never fails the
    caller (see ``_send``); ``on_failure`` is called when the task was not
    published (e.g. to mark its row for the dispatcher); its own errors are
    logged."""
    transaction.on_commit(functools.partial(_send, task_name, args, on_failure))
