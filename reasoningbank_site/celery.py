"""The Celery app, and ``enqueue_on_commit``: how services hand work to a
worker without importing any task module (tasks import services, never the
other way round)."""

import logging
import os
import threading

from celery import Celery
from django.db import transaction

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank_site.settings")

log = logging.getLogger(__name__)

app = Celery("reasoningbank")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


_discovery = threading.Lock()


def _registered_task(name: str):
    if name not in app.tasks:
        # Autodiscovery is lazy: a web process has not imported the apps' task modules yet.
        # One thread imports them; the others wait (concurrent imports saw a half-filled registry).
        with _discovery:
            if name not in app.tasks:
                app.loader.import_default_modules()
    return app.tasks[name]


def enqueue_on_commit(task_name: str, *args) -> None:
    """Publish the task registered as ``task_name`` with ``args`` once the
    current transaction commits (at once outside a transaction). The task is
    looked up by name and sent with ``.delay()``, so eager mode
    (``task_always_eager``) runs it inline. A broker error is logged and never
    fails the caller: its rows are already committed, and the sweeper picks
    them up."""

    def send() -> None:
        try:
            _registered_task(task_name).delay(*args)
        except Exception:
            log.exception("could not enqueue %s%r; the sweeper will pick it up", task_name, args)

    transaction.on_commit(send)
