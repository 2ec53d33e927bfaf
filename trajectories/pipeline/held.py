"""Which trajectories a live worker is working on, as PostgreSQL sees it.

A task that works on a trajectory (``trajectories.process``,
``trajectories.distill``) holds a shared session-level advisory lock on it
while it runs (``trajectory_held``). PostgreSQL releases the lock when the
task ends, or when the worker's session ends: a killed worker's socket closes
and its locks go with it. So a row in ``judging`` (or a single trajectory's
``distilling``) that no session holds has lost its worker, and the sweeper
re-sends it within a minute (RB_PIPELINE_ORPHAN_SECONDS after its last move,
checked every RB_SWEEP_INTERVAL_SECONDS) instead of waiting until it is stale
(RB_PIPELINE_STALE_SECONDS). Every move stays compare-and-set, so a re-sent
row is judged once. A MaTTS group's distillation (several rows in one task)
keeps the stale rule."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.conf import settings
from django.db import DatabaseError, connection

# The advisory lock's upper 32 bits, "RBTR": apart from every other advisory lock of the app.
NAMESPACE = 0x52425452
ID_MAX = 2**32 - 1  # the lower 32 bits hold the trajectory id


def _key(trajectory_id: int) -> int:
    return (NAMESPACE << 32) | trajectory_id


@contextlib.contextmanager
def trajectory_held(trajectory_id: int) -> Iterator[None]:
    """Hold the trajectory's liveness lock (shared: a redelivered task for the same row does not wait)
    while the body runs. An id beyond 32 bits is not held: its row keeps the stale rule. With
    RB_PIPELINE_ORPHAN_SECONDS at 0 (workers behind a transaction-mode pooler, where a session lock
    would stay on a server connection the pooler hands to others) nothing is held and the rule is off."""
    if settings.RB_PIPELINE_ORPHAN_SECONDS <= 0 or not 0 < trajectory_id <= ID_MAX:
        yield
        return
    key = _key(trajectory_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock_shared(%s)", [key])
    try:
        yield
    finally:
        with contextlib.suppress(DatabaseError), connection.cursor() as cursor:  # a lost session lost its lock
            cursor.execute("SELECT pg_advisory_unlock_shared(%s)", [key])


def trajectories_held() -> set[int]:
    """The ids of the trajectories some live session of this database holds."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted"
            " AND classid = %s::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            [NAMESPACE],
        )
        return {int(row[0]) for row in cursor.fetchall()}
