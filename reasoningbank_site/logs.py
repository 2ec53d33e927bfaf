"""Log context and formats: a request id that follows a trajectory into its
tasks, and JSON logs on request (``LOG_FORMAT=json``).

The request id: ``RequestIdMiddleware`` takes it from an incoming
``X-Request-ID`` (when short and made of safe characters) or makes one,
returns it in the response's ``X-Request-ID`` and holds it in a contextvar
for the request. Every task published while it is set carries it in a
message header (``before_task_publish``); the worker puts it back in the
contextvar for the task's run (``task_prerun``), so the judge and distill of
a trajectory log the id of the request that ingested it, and so does every
task they enqueue in turn. The worker also knows the task's name and, for a
task that takes a ``trajectory_id``, which trajectory.

Both formatters read the contextvars: the plain one appends
``[request_id=… trajectory_id=… task=…]`` when known; the JSON one writes one
object per line with timestamp, level, logger, message, exception and those
fields. In a worker, Celery installs its own handlers; with ``LOG_FORMAT=json``
they get the JSON formatter too (``after_setup_logger``)."""

from __future__ import annotations

import contextvars
import inspect
import logging
import re
import time
import uuid

from celery.signals import after_setup_logger, after_setup_task_logger, before_task_publish, task_postrun, task_prerun
from django.conf import settings
from django.core.signals import request_finished
from django.dispatch import receiver
from pythonjsonlogger.json import JsonFormatter

HEADER = "X-Request-ID"
TASK_HEADER = "rb_request_id"  # the Celery message header carrying it
VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

log = logging.getLogger(__name__)

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
trajectory_id: contextvars.ContextVar[int | None] = contextvars.ContextVar("trajectory_id", default=None)
task_name: contextvars.ContextVar[str | None] = contextvars.ContextVar("task_name", default=None)
_CONTEXT = {"request_id": request_id, "trajectory_id": trajectory_id, "task": task_name}


def log_context() -> dict:
    """The known ones of request_id, trajectory_id and task."""
    return {key: var.get() for key, var in _CONTEXT.items() if var.get() is not None}


def request_id_from(sent: str | None) -> str:
    """The client's id when it is short and safe to log and echo, else a fresh one."""
    sent = (sent or "").strip()
    return sent if VALID_REQUEST_ID.fullmatch(sent) else uuid.uuid4().hex


class RequestIdMiddleware:
    """Sets the request id for the request's log lines and its tasks, and returns it in ``X-Request-ID``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        rid = request_id_from(request.headers.get(HEADER))
        # Held until the response is closed (request_finished), not just until this returns: Django logs a
        # 4xx/5xx ("Not Found: …") after the middleware chain, and that line belongs to the request too.
        request_id.set(rid)
        response = self.get_response(request)
        response[HEADER] = rid
        return response


@receiver(request_finished)
def _request_done(**kwargs) -> None:
    request_id.set(None)


class PlainFormatter(logging.Formatter):
    """The human-readable line, with the log context appended when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = log_context()
        if not context:
            return line
        first, newline, rest = line.partition("\n")  # keep a traceback below the tagged first line
        tags = " ".join(f"{key}={value}" for key, value in context.items())
        return f"{first} [{tags}]{newline}{rest}"


class JsonLineFormatter(JsonFormatter):
    """One JSON object per line: timestamp (UTC, ISO 8601), level, logger,
    message, exception (when there is one) and the log context."""

    def __init__(self, **kwargs):
        kwargs.setdefault("timestamp", True)
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger", "exc_info": "exception"})
        super().__init__("%(levelname)s %(name)s %(message)s", **kwargs)

    def add_fields(self, log_record: dict, record: logging.LogRecord, message_dict: dict) -> None:
        super().add_fields(log_record, record, message_dict)
        for key, value in log_context().items():
            log_record.setdefault(key, value)


# --- Celery: the request id rides in a message header ------------------------------


@before_task_publish.connect
def _send_request_id(headers=None, **kwargs) -> None:
    rid = request_id.get()
    if rid and headers is not None:
        headers[TASK_HEADER] = rid


_task_tokens: dict[str, tuple[float, list]] = {}  # task id → (start time, the contextvar tokens to reset)


def _trajectory_of(task, args, kwargs) -> int | None:
    try:
        bound = inspect.signature(task.run).bind_partial(*(args or ()), **(kwargs or {}))
    except (TypeError, ValueError):
        return None
    value = bound.arguments.get("trajectory_id")
    return value if isinstance(value, int) else None


@task_prerun.connect
def _enter_task(task_id=None, task=None, args=None, kwargs=None, **extra) -> None:
    if task is None:
        return
    rid = task.request.get(TASK_HEADER)
    rid = rid if isinstance(rid, str) and VALID_REQUEST_ID.fullmatch(rid) else None
    tokens = [task_name.set(task.name), trajectory_id.set(_trajectory_of(task, args, kwargs))]
    if rid or not task.request.is_eager:  # an eager task (tests) has no header: it keeps the caller's id
        tokens.append(request_id.set(rid))
    _task_tokens[task_id] = (time.monotonic(), tokens)


@task_postrun.connect
def _leave_task(task_id=None, task=None, state=None, **extra) -> None:
    started, tokens = _task_tokens.pop(task_id, (None, []))
    if task is not None and started is not None and not task.request.is_eager:
        # One line per task run that carries its request id and trajectory (Celery's own lines do not).
        log.info("%s finished: %s in %.2f s", task.name, state, time.monotonic() - started)
    for token in reversed(tokens):
        token.var.reset(token)


# --- Celery's own handlers (a worker) get the JSON format too ----------------------


def _use_json(logger: logging.Logger) -> None:
    if settings.LOG_FORMAT == "json":
        for handler in logger.handlers:
            handler.setFormatter(JsonLineFormatter())


@after_setup_logger.connect
def _json_root(logger=None, **kwargs) -> None:
    if logger is not None:
        _use_json(logger)


@after_setup_logger.connect
def _keep_the_ready_line(loglevel=None, **kwargs) -> None:
    """A worker started quieter than INFO (`make run`'s default) still says "<host> ready.": it is
    how rb_run sees that a restarted worker is back, and how a person sees the worker is up."""
    if isinstance(loglevel, int) and loglevel > logging.INFO:
        logging.getLogger("celery.apps.worker").setLevel(logging.INFO)


@after_setup_task_logger.connect
def _json_task_logger(logger=None, **kwargs) -> None:
    if logger is not None:
        _use_json(logger)
