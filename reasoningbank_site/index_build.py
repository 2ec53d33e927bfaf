"""Memory for index builds: an HNSW graph built in less memory than it needs is paged out as it grows
(pgvector says "hnsw graph no longer fits into maintenance_work_mem") and takes several times as long.
The embedded server is sized for it (reasoningbank_site.pg_settings); a managed server often keeps
PostgreSQL's 64 MB. What is built here gets at least RB_INDEX_BUILD_MEMORY, never less than the server's
own value."""

from __future__ import annotations

import contextlib
import os

from django.db import DEFAULT_DB_ALIAS, connections, transaction

# At least this for a build (RB_INDEX_BUILD_MEMORY): an HNSW graph of 384-dimension vectors, m=32, takes
# about 2.1 kB per item (measured: 101 MB for 50k items), so 1 GB holds the graph of ~480k items.
DEFAULT_BUILD_MEMORY = "1GB"


def index_build_memory(*, using: str = DEFAULT_DB_ALIAS) -> str:
    """The maintenance_work_mem an index build gets: the larger of the server's and RB_INDEX_BUILD_MEMORY."""
    wanted = os.environ.get("RB_INDEX_BUILD_MEMORY") or DEFAULT_BUILD_MEMORY
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT CASE WHEN pg_size_bytes(%s) > pg_size_bytes(current_setting('maintenance_work_mem'))"
            " THEN %s ELSE current_setting('maintenance_work_mem') END",
            [wanted, wanted],
        )
        return cursor.fetchone()[0]


@contextlib.contextmanager
def index_build(*, using: str = DEFAULT_DB_ALIAS):
    """A transaction whose index builds get index_build_memory() (SET LOCAL: the connection's own value is
    back afterwards)."""
    memory = index_build_memory(using=using)
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute("SELECT set_config('maintenance_work_mem', %s, true)", [memory])
        yield cursor


def libpq_options(*, using: str = DEFAULT_DB_ALIAS) -> str:
    """PGOPTIONS for a client program that builds indexes (pg_restore)."""
    return f"-c maintenance_work_mem={index_build_memory(using=using)}"


def index_build_operation():
    """A migration operation, placed before the AddIndex of an index built over a table with data (an HNSW
    index, a GIN index): the rest of the migration's transaction builds with index_build_memory()."""
    from django.db import migrations

    def raise_memory(apps, schema_editor):
        memory = index_build_memory(using=schema_editor.connection.alias)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute("SELECT set_config('maintenance_work_mem', %s, true)", [memory])

    return migrations.RunPython(raise_memory, migrations.RunPython.noop, elidable=True)
