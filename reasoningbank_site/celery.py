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

from reasoningbank_site.text import counted

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank_site.settings")

log = logging.getLogger(__name__)

app = Celery("reasoningbank")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


_discovery = threading.Lock()
# After a failed publish, this process leaves new tasks to the sweeper until this monotonic time,
# so a batch of N trajectories does not wait N publish timeouts on a dead broker.
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


class _Kept(threading.local):
    """This thread's broker connection and producer, kept between publishes
    (a fresh connection per publish pays a connect on Redis, and on the
    embedded broker a queue declaration that lists the queue folder; figures
    in bench/README.md)."""

    connection = None
    producer = None
    pid = 0
    broker: tuple = ()  # the broker URL and transport options it was opened with (tests switch brokers)


_kept = _Kept()


def _kept_producer():
    """This thread's producer, on a connection whose every socket operation
    gives up after RB_BROKER_PUBLISH_TIMEOUT seconds; opened on first use,
    and again in a forked child (the parent's socket is not the child's)."""
    broker = (app.conf.broker_url, dict(app.conf.broker_transport_options or {}))
    if _kept.producer is not None and _kept.broker != broker:
        _kept_drop()
    if _kept.producer is None or _kept.pid != os.getpid():
        timeout = settings.RB_BROKER_PUBLISH_TIMEOUT
        # max_retries=0: kombu's connect retries (first pause 2 s) would hold the request when the
        # broker refuses connections (stopped); one attempt, then the dispatcher has the row.
        options = {"socket_timeout": timeout, "socket_connect_timeout": timeout, "max_retries": 0}
        connection = app.connection_for_write(connect_timeout=timeout, transport_options=options)
        producer = app.amqp.Producer(connection, auto_declare=False)
        _kept.connection, _kept.producer, _kept.pid, _kept.broker = connection, producer, os.getpid(), broker
    return _kept.producer


def _kept_drop() -> None:
    """Forget this thread's connection after an error: the next publish opens a new one.
    Closing sends the broker nothing (Redis: the sockets are shut down), so a frozen one costs no wait.
    (Not kombu's collect(): it changes the process-wide default socket timeout, under other threads.)"""
    connection, pid = _kept.connection, _kept.pid
    _kept.connection = _kept.producer = None
    if connection is not None and pid == os.getpid():
        try:
            connection.close()
        except Exception:
            log.debug("closing a failed broker connection failed", exc_info=True)


def _publish_kept(task, args: tuple) -> None:
    try:
        task.apply_async(args, producer=_kept_producer(), retry=False)
    except Exception:
        _kept_drop()
        raise


def _publish(task, args: tuple) -> None:
    """Publish once, on this thread's kept connection, whose every socket
    operation gives up after RB_BROKER_PUBLISH_TIMEOUT seconds: a frozen or
    unreachable broker costs the caller (an ingest request) that long at
    most, never a retry loop. A kept connection that fails fast (broken: the
    broker restarted since its last use) is replaced and the publish tried
    once more on the new one; a slow failure (a frozen broker) is not retried."""
    if app.conf.task_always_eager:
        task.apply_async(args)  # runs inline
        return
    reused = _kept.producer is not None and _kept.pid == os.getpid()
    started = time.monotonic()
    try:
        _publish_kept(task, args)
    except Exception:
        if not reused or time.monotonic() - started >= settings.RB_BROKER_PUBLISH_TIMEOUT / 2:
            raise
        log.info("the kept broker connection was broken; publishing %s on a new one", task.name)
        _publish_kept(task, args)


def _not_sent(on_failure: Callable[[], object] | None) -> None:
    if on_failure is not None:
        try:
            on_failure()
        except Exception:
            log.exception("the failure hook of an unsent task failed")


def _send(messages: list[tuple[str, tuple, Callable[[], object] | None]]) -> None:
    """Publish ``messages`` (task name, args, failure hook) one after the other
    on this thread's kept connection. After a failure the rest are not tried:
    each unsent message's hook is called, and the process leaves new tasks to
    the dispatcher and the sweeper for RB_BROKER_RETRY_AFTER seconds."""
    for n, (task_name, args, on_failure) in enumerate(messages):
        if time.monotonic() < _broker_down_until["until"]:
            log.warning(
                "broker recently unreachable: not enqueuing %s from %s%r; the sweeper will pick them up",
                counted(len(messages) - n, "task"),
                task_name,
                args,
            )
            for _name, _args, hook in messages[n:]:
                _not_sent(hook)
            return
        try:
            _publish(_registered_task(task_name), args)
        except Exception:
            _broker_down_until["until"] = time.monotonic() + settings.RB_BROKER_RETRY_AFTER
            log.exception("could not enqueue %s%r; the sweeper will pick it up", task_name, args)
            _not_sent(on_failure)


class _Batch:
    """The tasks enqueued at one savepoint depth of one transaction: they are
    committed or rolled back together, so one on_commit callback publishes them all."""

    def __init__(self, hooks: list):
        self.hooks = hooks  # the connection's on_commit list this batch's callback was appended to
        self.messages: list[tuple[str, tuple, Callable[[], object] | None]] = []
        self.sent = False

    def send(self) -> None:
        self.sent = True
        _send(self.messages)


_batches = threading.local()  # .open: {(database alias, savepoint ids): _Batch}, this thread's


def enqueue_on_commit(task_name: str, *args, on_failure: Callable[[], object] | None = None) -> None:
    """Publish the task registered as ``task_name`` with ``args`` once the
    current transaction commits (at once outside a transaction). The task is
    looked up by name; eager mode (``task_always_eager``) runs it inline. The
    publish has a short timeout and no retry; a broker error is logged and
    never fails the caller: its rows are already committed, and the sweeper
    picks them up. After a failure the process does not try again for
    RB_BROKER_RETRY_AFTER seconds. ``on_failure`` is called when the task was
    not published (e.g. to mark its row for the dispatcher); its own errors
    are logged.

    The tasks a transaction enqueues at one savepoint depth go out together,
    back to back on this thread's kept broker connection, from one on_commit
    callback; those of a savepoint that rolls back are discarded with it (its
    callback is, as Django discards any)."""
    message = (task_name, args, on_failure)
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        transaction.on_commit(functools.partial(_send, [message]))  # at once (or Django's error)
        return
    key = (connection.alias, tuple(connection.savepoint_ids))
    batches = _batches.__dict__.setdefault("open", {})
    batch = batches.get(key)
    # Django replaces its on_commit list when the transaction ends or a savepoint rolls back: a batch
    # appended to another list than the current one belongs to a finished transaction or may have been
    # discarded; so may a batch whose callback already ran (tests run callbacks without ending the transaction).
    if batch is None or batch.sent or batch.hooks is not connection.run_on_commit:
        if len(batches) > 64:
            batches.clear()  # stale batches of rolled-back transactions
        batch = batches[key] = _Batch(connection.run_on_commit)
        transaction.on_commit(batch.send)
    batch.messages.append(message)
