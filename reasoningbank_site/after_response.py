"""Work that a request owes but its answer need not wait for (issue 14).

``after_response(fn, *args)`` during a request runs ``fn(*args)`` once the
response has been sent: Django sends ``request_finished`` when the WSGI server
closes the response, which it does after writing the last byte (gunicorn,
the development server and the test client alike), so the client already
holds its answer. Outside a request (a Celery task, a management command, a
test calling a service) it runs at once, so a caller never depends on being
in one.

What is deferred must be safe to lose when the process dies in the
milliseconds between the answer and its run (gunicorn's graceful stop waits
for it; only a kill does not), and must not raise: an exception is logged
with the request's id and swallowed, since the answer is already sent.
The functions run on the request's own thread and database connection,
in the order they were registered.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable

from django.core.signals import request_finished, request_started

from reasoningbank_site import logs

log = logging.getLogger(__name__)

# This request's deferred calls: a list while a request is being answered, None otherwise.
_pending: contextvars.ContextVar[list | None] = contextvars.ContextVar("after_response", default=None)


def after_response(fn: Callable[..., object], /, *args, **kwargs) -> None:
    """Run ``fn(*args, **kwargs)`` after the current response is sent, or at once outside a request."""
    pending = _pending.get()
    if pending is None:
        fn(*args, **kwargs)
        return
    pending.append((fn, args, kwargs, logs.request_id.get()))


def _request_started(**kwargs) -> None:
    _run_pending()  # a request whose response was never closed (a server's failure) still does its work
    _pending.set([])


def _request_finished(**kwargs) -> None:
    _run_pending()


def _run_pending() -> None:
    pending = _pending.get()
    _pending.set(None)
    for fn, args, kwargs, request_id in pending or ():
        token = logs.request_id.set(request_id)  # its log lines belong to the request
        try:
            fn(*args, **kwargs)
        except Exception:
            log.exception("after the response: %s failed", getattr(fn, "__qualname__", fn))
        finally:
            logs.request_id.reset(token)


def connect() -> None:
    """Connect the signal receivers (AppConfig.ready: before the first request)."""
    request_started.connect(_request_started, dispatch_uid="reasoningbank_site.after_response.started")
    request_finished.connect(_request_finished, dispatch_uid="reasoningbank_site.after_response.finished")
