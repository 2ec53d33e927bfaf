"""Which trajectories a live worker is working on, as PostgreSQL sees it.

Every move into ``judging`` or ``distilling`` records the database backend
that made it (``Trajectory.taken_by``: ``pg_backend_pid()`` written by the
move's own UPDATE, so it costs no query; trajectories.pipeline.transitions).
A worker's backend lives as long as its database session: a killed worker's
socket closes and PostgreSQL ends the backend. So a row in ``judging`` (or a
single trajectory's ``distilling``) whose backend is gone, or is a newer
backend that reuses the pid, has lost its worker, and the sweeper re-sends it
within a minute (RB_PIPELINE_ORPHAN_SECONDS after its last move, checked
every RB_SWEEP_INTERVAL_SECONDS) instead of waiting until it is stale
(RB_PIPELINE_STALE_SECONDS). Every move stays compare-and-set, so a re-sent
row is judged once. Behind a transaction-mode pooler the backend is the
pooler's server connection, which outlives a worker: the rule never fires
there and the stale rule applies. A MaTTS group's distillation (several rows
in one task) keeps the stale rule."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection
from django.db.models.expressions import RawSQL

TAKEN_BY = RawSQL("pg_backend_pid()", ())
# A backend under the same pid that started this long after the row's move is another one (the pid was
# reused). The margin covers a clock difference between the workers (who stamp the move) and PostgreSQL.
PID_REUSED_AFTER = timedelta(minutes=1)


def backends_alive() -> dict[int, datetime]:
    """The live backends of this database: pid → when the backend started."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid, backend_start FROM pg_stat_activity WHERE datname = current_database()")
        return dict(cursor.fetchall())


def worker_gone(taken_by: int | None, moved_at: datetime, alive: dict[int, datetime]) -> bool:
    """The backend that took a row (at its last move, ``moved_at``) has ended: none runs under its pid,
    or the one that does started well after the move. A row taken before backends were recorded is not
    judged."""
    if taken_by is None:
        return False
    started = alive.get(taken_by)
    return started is None or started > moved_at + PID_REUSED_AFTER
