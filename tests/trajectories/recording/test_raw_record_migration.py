"""The upgrade that moves each trajectory's raw record (steps, final answer) to a table of its own, on a
database with data: every unpurged record is copied word for word, every purge already made is a retention
run that the purged trajectories name, the final answers' words are still found, and the downgrade puts all
of it back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from trajectories.models import Trajectory
from trajectories.records.models import RawRecord, RetentionRun
from trajectories.records.selectors import trajectory_list

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("trajectories", "0025_partial_task_key")]


def _executor() -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    return executor


def test_the_upgrade_moves_every_raw_record_and_keeps_the_purges(bank, other_bank):
    executor = _executor()
    executor.migrate(BEFORE)
    purged_at = timezone.now() - timedelta(days=2)
    try:
        old = executor.loader.project_state(BEFORE).apps.get_model("trajectories", "Trajectory")
        kept = [
            old.objects.create(
                bank_id=target.pk,
                task=f"Book trip {i}",
                steps=[{"index": 0, "kind": "action", "content": f"search {i}"}],
                final_answer=f"Seat {i}A, coach zebra{i}",
                status="done",
            )
            for i, target in enumerate([bank] * 5 + [other_bank] * 3)
        ]
        gone = [
            old.objects.create(
                bank_id=bank.pk,
                task=f"Old trip {i}",
                steps=[],
                final_answer="",
                status="done",
                steps_purged_at=purged_at,
                steps_purged_days=30,
            )
            for i in range(4)
        ]
        old.objects.filter(pk__in=[t.pk for t in gone]).update(created_at=purged_at - timedelta(days=45))
    finally:
        call_command("migrate", verbosity=0)

    for before in kept:
        after = Trajectory.objects.get(pk=before.pk)
        assert (after.steps, after.final_answer, after.steps_purged) == (before.steps, before.final_answer, False)
        record = RawRecord.objects.get(pk=before.pk)
        assert (record.bank_id, record.created_at) == (before.bank_id, before.created_at)
    (run,) = RetentionRun.objects.all()
    assert (run.bank_id, run.ran_at, run.retention_days, run.purged) == (bank.pk, purged_at, 30, 4)
    for before in gone:
        after = Trajectory.objects.get(pk=before.pk)
        assert after.steps_purged and (after.steps_purged_at, after.steps_purged_days) == (purged_at, 30)
    assert not RawRecord.objects.filter(pk__in=[t.pk for t in gone]).exists()
    with connection.cursor() as cursor:  # analyzed: the text search's rarest word is read from the statistics
        cursor.execute(
            "SELECT tablename, attname FROM pg_stats WHERE schemaname = current_schema()"
            " AND attname IN ('search_vector', 'answer_vector') AND tablename LIKE 'trajectories_%%'"
        )
        assert set(cursor.fetchall()) == {
            ("trajectories_trajectory", "search_vector"),
            ("trajectories_rawrecord", "answer_vector"),
        }
    assert [t.pk for t in trajectory_list(bank=bank, text="zebra3 trip")] == [kept[3].pk]
    assert [t.pk for t in trajectory_list(bank=other_bank, text="seat 6a")] == [kept[6].pk]

    executor = _executor()
    executor.migrate(BEFORE)  # the downgrade: the records and the purged marks back on the trajectory rows
    try:
        old = executor.loader.project_state(BEFORE).apps.get_model("trajectories", "Trajectory")
        for before in kept:
            back = old.objects.get(pk=before.pk)
            assert (back.steps, back.final_answer, back.steps_purged_at) == (before.steps, before.final_answer, None)
        for before in gone:
            back = old.objects.get(pk=before.pk)
            assert (back.steps, back.steps_purged_at, back.steps_purged_days) == ([], purged_at, 30)
    finally:
        call_command("migrate", verbosity=0)
