"""Tables a bulk write filled are analysed at once (pg_stat_user_tables.last_analyze: a manual ANALYZE,
not autovacuum's), and index builds get enough memory."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection

from memories.releases.selectors import RELEASE_FORMAT
from memories.releases.transfer import release_import
from reasoningbank_site.analyze import BULK_MIN_ROWS, analyze_after_bulk_write
from reasoningbank_site.index_build import index_build, index_build_memory
from tests import factories
from trajectories.ingest.batch import trajectory_ingest_batch
from trajectories.models import Trajectory

pytestmark = pytest.mark.django_db(transaction=True)


def _analysed(table: str):
    """(last manual ANALYZE, rows changed since any ANALYZE) of ``table``."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_analyze, n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = %s", [table])
        return cursor.fetchone()


def test_a_restore_leaves_every_table_analysed(tmp_path):
    bank = factories.make_bank()
    factories.make_token(bank)
    path = tmp_path / "db.dump"
    call_command("rb_backup", str(path), stdout=io.StringIO())
    call_command("rb_restore", str(path), stdout=io.StringIO())
    for table in ("accounts_bank", "accounts_apitoken", "memories_memoryitem", "trajectories_trajectory"):
        last_analyze, changed = _analysed(table)
        assert last_analyze is not None, table  # restored tables are new: only our ANALYZE sets it
        assert changed == 0, table


def test_a_release_import_analyses_the_items_it_wrote():
    bank = factories.make_bank()
    user = factories.make_user()
    rows = [
        {"title": f"Lesson {i} about forms", "description": f"Use when form {i} fails.", "content": f"Do step {i}."}
        for i in range(BULK_MIN_ROWS)
    ]
    before = _analysed("memories_memoryitem")[0]
    _outcome, counts = release_import(bank=bank, records=[{"release": {"format": RELEASE_FORMAT}}, *rows], actor=user)
    assert counts.created == BULK_MIN_ROWS
    last_analyze, changed = _analysed("memories_memoryitem")
    assert last_analyze is not None and (before is None or last_analyze > before)
    assert changed == 0


def test_a_large_batch_analyses_the_trajectories_and_a_small_one_does_not():
    bank = factories.make_bank()
    items = [{"task": f"task {i}", "steps": [{"thought": "x"}]} for i in range(BULK_MIN_ROWS)]
    before = _analysed("trajectories_trajectory")[0]
    results = trajectory_ingest_batch(bank=bank, token=None, items=items)
    assert all(r.ok for r in results)
    after = _analysed("trajectories_trajectory")[0]
    assert after is not None and (before is None or after > before)
    # A write of a tenth of a large table's rows is left to autovacuum.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE trajectories_trajectory")  # the estimate: the rows there now
    assert Trajectory.objects.count() >= BULK_MIN_ROWS
    assert analyze_after_bulk_write([Trajectory], rows=BULK_MIN_ROWS - 1) is False
    assert analyze_after_bulk_write([Trajectory], rows=10 * Trajectory.objects.count() + 1) is True


def test_an_index_build_gets_at_least_the_build_memory_and_the_connection_keeps_its_own(monkeypatch):
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '64MB'")  # a managed server's default
    monkeypatch.setenv("RB_INDEX_BUILD_MEMORY", "3GB")
    assert index_build_memory() == "3GB"
    with index_build() as cursor:
        cursor.execute("SHOW maintenance_work_mem")
        assert cursor.fetchone()[0] == "3GB"
    with connection.cursor() as cursor:
        cursor.execute("SHOW maintenance_work_mem")
        assert cursor.fetchone()[0] == "64MB"
    # Never less than what the server has.
    monkeypatch.setenv("RB_INDEX_BUILD_MEMORY", "16MB")
    assert index_build_memory() == "64MB"


def test_the_demo_load_analyses_what_it_loaded(tmp_path):
    from reasoningbank_site.demo import demo_seed

    tables = ("memories_memoryitem", "trajectories_trajectory")
    before = {table: _analysed(table)[0] for table in tables}
    report = demo_seed(token_path=tmp_path / "demo-token")
    assert report.notes
    for table in tables:
        last_analyze, changed = _analysed(table)
        assert last_analyze is not None and (before[table] is None or last_analyze > before[table]), table
        assert changed == 0, table


def test_a_data_migrations_analyze_operation_analyses_its_tables():
    from django.db.migrations.state import ProjectState

    from reasoningbank_site.analyze import analyze_operation

    before = _analysed("trajectories_judgment")[0]
    state = ProjectState()
    with connection.schema_editor() as editor:
        analyze_operation("trajectories_judgment").database_forwards("trajectories", editor, state, state)
    after = _analysed("trajectories_judgment")[0]
    assert after is not None and (before is None or after > before)


def test_a_migrations_index_build_operation_raises_the_memory_for_its_transaction(monkeypatch):
    from django.db import transaction
    from django.db.migrations.state import ProjectState

    from reasoningbank_site.index_build import index_build_operation

    monkeypatch.setenv("RB_INDEX_BUILD_MEMORY", "2GB")
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '64MB'")
    state = ProjectState()
    with transaction.atomic(), connection.schema_editor(atomic=False) as editor:
        index_build_operation().database_forwards("memories", editor, state, state)
        with connection.cursor() as cursor:
            cursor.execute("SHOW maintenance_work_mem")
            assert cursor.fetchone()[0] == "2GB"
    with connection.cursor() as cursor:
        cursor.execute("SHOW maintenance_work_mem")
        assert cursor.fetchone()[0] == "64MB"
