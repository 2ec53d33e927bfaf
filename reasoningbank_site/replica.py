"""An optional read replica for the reports: ``DATABASE_REPLICA_URL`` adds the ``replica`` database, and the
views decorated with ``reads_from_replica`` (the dashboard and its live refresh, Impact, the exports, the release
download) read from it. Everything else reads from the primary, and every write goes to the primary, always.

The choice lives in a context variable, so it is per thread and per asyncio task: a decorated view's reads go to
the replica while it runs (and while its streamed answer is produced), and nothing else's do. Sessions, the
cache, login throttling and users are always read from the primary (a session just created must be found).

A replica that does not answer is not the primary's problem: the report reads from the primary instead, with a
warning in the log, and the replica is not tried again for ``RB_REPLICA_RETRY_SECONDS``. A replica further behind
than ``RB_REPLICA_MAX_LAG_SECONDS`` is left too until it has caught up (one warning per switch, either way); its
lag is read at most once every ``LAG_CHECK_SECONDS`` per process, not once per report."""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import threading
import time
from contextvars import ContextVar

from django.conf import settings
from django.db import connections
from django.http import StreamingHttpResponse

from reasoningbank_site.env import envfloat

REPLICA = "replica"
log = logging.getLogger(__name__)

_reading_replica: ContextVar[bool] = ContextVar("reads_from_replica", default=False)
# Apps whose rows a request needs fresh from wherever it was just written: always the primary.
PRIMARY_ONLY_APPS = frozenset({"sessions", "auth", "axes", "django_cache", "contenttypes", "migrations"})

_down_until = 0.0
_down_lock = threading.Lock()

LAG_CHECK_SECONDS = 5.0
_lag_checked_until = 0.0  # monotonic: the remembered lag verdict holds until then
_behind = False  # the last lag read was over RB_REPLICA_MAX_LAG_SECONDS: the reports read the primary
_lag_lock = threading.RLock()  # held by _too_far_behind while judge_lag takes it too


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


def replica_answers() -> bool:
    """Whether the replica can be used now; a failure is logged and remembered for RB_REPLICA_RETRY_SECONDS."""
    global _down_until
    if time.monotonic() < _down_until:
        return False
    try:
        replica = connections[REPLICA]
        replica.close_if_health_check_failed()  # a persistent connection the replica's restart broke
        replica.ensure_connection()
        return not _too_far_behind()
    except Exception as exc:  # any failure to connect: the reports use the primary
        with _down_lock:
            _down_until = time.monotonic() + envfloat("RB_REPLICA_RETRY_SECONDS", 30.0)
        log.warning("read replica unavailable, reports read from the primary: %s", str(exc).strip()[:300])
        with contextlib.suppress(Exception):
            connections[REPLICA].close()
        return False


def _too_far_behind() -> bool:
    """Whether the replica lags more than allowed, from a lag read at most every LAG_CHECK_SECONDS."""
    if not settings.RB_REPLICA_MAX_LAG_SECONDS or time.monotonic() < _lag_checked_until:
        return _behind
    with _lag_lock:
        if time.monotonic() >= _lag_checked_until:
            judge_lag(replica_status()["lag_seconds"])
    return _behind


def judge_lag(lag: float) -> dict:
    """Remember whether a replica ``lag`` seconds behind may serve the reports (a warning when that changes);
    return where the reports read and why, for the readiness answer."""
    global _behind, _lag_checked_until
    limit = settings.RB_REPLICA_MAX_LAG_SECONDS
    behind = bool(limit) and lag > limit
    with _lag_lock:
        _lag_checked_until = time.monotonic() + LAG_CHECK_SECONDS
        switched, _behind = behind != _behind, behind
    if switched and behind:
        log.warning("read replica %.1f s behind (over %g s), reports read from the primary", lag, limit)
    elif switched:
        log.warning("read replica caught up (%.1f s behind), reports read from it again", lag)
    if not limit:
        return {"reports_read": "replica", "why": "the lag is not checked (RB_REPLICA_MAX_LAG_SECONDS=0)"}
    if behind:
        return {"reports_read": "primary", "why": f"{lag:.1f} s behind, over RB_REPLICA_MAX_LAG_SECONDS={limit:g}"}
    return {"reports_read": "replica", "why": f"{lag:.1f} s behind, within RB_REPLICA_MAX_LAG_SECONDS={limit:g}"}


@contextlib.contextmanager
def replica_reads(use: bool | None = None):
    """Within this block, reads go to the replica when one is configured and answers (else to the primary);
    ``use`` is that decision when it has been taken already."""
    token = _reading_replica.set((replica_configured() and replica_answers()) if use is None else use)
    try:
        yield
    finally:
        _reading_replica.reset(token)


def reading_replica() -> bool:
    return _reading_replica.get()


def _streamed(chunks, use: bool):
    """A streamed answer's chunks, each produced reading where the view read (it has returned by then): one
    export reads one database from its first line to its last."""
    iterator = iter(chunks)
    while True:
        with replica_reads(use):
            try:
                chunk = next(iterator)
            except StopIteration:
                return
        yield chunk


def reads_from_replica(view):
    """Decorate a view (Django or django-ninja, sync): its reads, and its streamed answer's, use the replica."""

    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        use = replica_configured() and replica_answers()
        with replica_reads(use):
            response = view(*args, **kwargs)
        if use and isinstance(response, StreamingHttpResponse) and not response.is_async:
            response.streaming_content = _streamed(response.streaming_content, use)
        return response

    # django-ninja reads the parameters' types from the signature, resolving names in the function's module:
    # give it the view's, resolved there (this module does not know the view's schemas).
    with contextlib.suppress(NameError):
        wrapped.__signature__ = inspect.signature(view, eval_str=True)
    return wrapped


class ReplicaRouter:
    """Reads inside ``replica_reads`` go to the replica; every other read, every write, every migration goes
    to the primary (``default``). Relations between the two aliases are allowed: they hold the same data."""

    def db_for_read(self, model, **hints):
        instance = hints.get("instance")
        if instance is not None and instance._state.db:
            return instance._state.db  # a related object is read where its owner was
        if _reading_replica.get() and replica_configured() and model._meta.app_label not in PRIMARY_ONLY_APPS:
            return REPLICA
        return "default"

    def db_for_write(self, model, **hints):
        return "default"

    def allow_relation(self, obj1, obj2, **hints):
        return True

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == "default"


def replica_status() -> dict:
    """The replica's state for the readiness answer: whether it answers and how far behind it is (seconds
    since the last transaction it replayed; 0 when it has replayed everything it received)."""
    with connections[REPLICA].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        if not cursor.fetchone()[0]:
            raise RuntimeError("the replica is not a standby (it accepts writes)")
        cursor.execute(
            "SELECT pg_is_wal_replay_paused(), CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()"
            " THEN 0 ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) END"
        )
        paused, lag = cursor.fetchone()
    return {"lag_seconds": round(float(lag or 0), 1), "replay_paused": bool(paused)}
