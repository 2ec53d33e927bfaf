"""ANALYZE after bulk writes: a restore, a release import, a large batch, the demo load, a data migration.

PostgreSQL plans from each table's statistics, which autovacuum refreshes only after its next nap (a
minute by default) and never for a table restored from a dump until it is written to again: until then
the planner counts a freshly filled table as nearly empty and picks nested loops and sequential scans that
take seconds at a million rows. These helpers run ANALYZE on the tables a write filled, after its
transaction commits (statistics of rows another transaction cannot see yet would be wrong)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model

# A write that adds this share of a table's rows moves its statistics (autovacuum's own default rule,
# autovacuum_analyze_scale_factor 0.1, applied at once instead of after autovacuum's next nap) ...
BULK_SHARE = 0.1
# ... and writes of fewer rows than this are left to autovacuum.
BULK_MIN_ROWS = 100


def _tables(models: Iterable[type[Model] | str]) -> list[str]:
    return [m if isinstance(m, str) else m._meta.db_table for m in models]


def analyze_now(models: Iterable[type[Model] | str] = (), *, using: str = DEFAULT_DB_ALIAS) -> None:
    """ANALYZE the tables of ``models`` (model classes or table names; none: the whole database) at once.
    SKIP_LOCKED: a table another ANALYZE (or autovacuum) holds is being analysed already."""
    connection = connections[using]
    names = ", ".join(connection.ops.quote_name(t) for t in _tables(models))
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE (SKIP_LOCKED) {names}".rstrip())


def analyze_after_commit(models: Iterable[type[Model] | str] = (), *, using: str = DEFAULT_DB_ALIAS) -> None:
    """ANALYZE the tables of ``models`` when the current transaction commits (at once outside one)."""
    tables = _tables(models)
    transaction.on_commit(lambda: analyze_now(tables, using=using), using=using)


def analyze_after_bulk_write(models: Iterable[type[Model] | str], *, rows: int, using: str = DEFAULT_DB_ALIAS) -> bool:
    """After a write that added ``rows`` rows to the first of ``models`` (the others: tables filled with
    it): ANALYZE them after commit when that is a large share of the table, or the table was never
    analysed. True when it will."""
    tables = _tables(models)
    if rows < BULK_MIN_ROWS:
        return False
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", [tables[0]])
        found = cursor.fetchone()
    estimate = found[0] if found else -1
    if estimate >= 0 and rows < BULK_SHARE * estimate:
        return False
    analyze_after_commit(tables, using=using)
    return True


def analyze_operation(*tables: str):
    """A migration operation that ANALYZEs ``tables`` (a data migration that filled them), for
    ``operations = [..., analyze_operation("app_table")]``."""
    from django.db import migrations

    return migrations.RunSQL(
        "ANALYZE " + ", ".join(f'"{t}"' for t in tables), reverse_sql=migrations.RunSQL.noop, elidable=True
    )
