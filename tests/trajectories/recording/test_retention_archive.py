"""Retention at scale (trajectories.records.retention, step_archive): each
batch's select reads the partial index of purgeable rows and starts where the
last batch stopped; each batch's steps are archived (gzip JSONL, fsynced)
before they are cleared, and a failed archive leaves them in place. Real
database, real files."""

import gzip
import json
import logging
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import AuditEvent
from accounts.teams.banks import bank_update_settings
from tests import factories
from trajectories.models import Status, Trajectory
from trajectories.records.models import RawRecord, RetentionRun
from trajectories.records.retention import purge_batch_query, trajectory_steps_purge_expired


@pytest.fixture
def retained(bank, owner):
    bank_update_settings(bank=bank, actor=owner, step_retention_days=30)
    bank.refresh_from_db()
    return bank


@pytest.fixture
def archive_dir(settings, tmp_path):
    settings.RB_STEP_ARCHIVE_DIR = str(tmp_path / "archive")
    return tmp_path / "archive"


def _age(trajectories, days, **at):
    Trajectory.objects.filter(pk__in=[t.pk for t in trajectories]).update(
        created_at=at.get("created_at") or timezone.now() - timedelta(days=days)
    )


def _archive_lines(path):
    with gzip.open(path, "rt") as handle:
        return [json.loads(line) for line in handle]


def test_batch_select_reads_the_index_of_the_records_still_kept(retained, other_bank):
    template = factories.make_done_trajectory(retained)
    now = timezone.now()
    rows = [
        Trajectory(bank=bank, task=f"Run {i}", steps=[], status=Status.DONE, created_at=now)
        for bank in (retained, other_bank)
        for i in range(3000)
    ]
    Trajectory.objects.bulk_create(rows, batch_size=1000)
    # Most of the bank's old records were purged by earlier runs; the other bank keeps its own.
    RawRecord.objects.filter(pk__in=[t.pk for i, t in enumerate(rows[:3000]) if i % 20]).delete()
    Trajectory.objects.exclude(pk=template.pk).update(created_at=now - timedelta(days=200))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE trajectories_trajectory")
        cursor.execute("ANALYZE trajectories_rawrecord")
    cutoff = now - timedelta(days=30)
    with transaction.atomic(), connection.cursor() as cursor:
        # A few thousand small rows: reading them all would be as cheap, so the plan is asked for without it.
        cursor.execute("SET LOCAL enable_seqscan = off")
        first = purge_batch_query(bank=retained, cutoff=cutoff, after=None)[:1000].explain()
        later = purge_batch_query(bank=retained, cutoff=cutoff, after=(cutoff - timedelta(days=300), 5))[
            :1000
        ].explain()
    for plan in (first, later):
        assert "Index Scan using rawrecord_bank_created" in plan and "Index Cond: ((bank_id =" in plan, plan
        assert "Sort" not in plan, plan  # the index's order is the batches' (created_at, trajectory)


def test_batches_resume_after_the_last_row_even_when_created_at_ties(retained, archive_dir):
    rows = [factories.make_done_trajectory(retained, final_answer=f"Answer {i}") for i in range(7)]
    same_instant = timezone.now() - timedelta(days=40)
    _age(rows, 0, created_at=same_instant)  # every row in one created_at: the pk breaks the tie
    assert trajectory_steps_purge_expired(batch_size=2) == {retained.pk: 7}
    assert not RawRecord.objects.filter(bank=retained).exists()
    (archive,) = (archive_dir / str(retained.public_id)).iterdir()
    assert sorted(line["final_answer"] for line in _archive_lines(archive)) == [f"Answer {i}" for i in range(7)]


def test_purge_archives_the_steps_before_clearing_them(retained, archive_dir):
    old = factories.make_done_trajectory(retained, external_id="run-1", final_answer="Sundays 12:00-17:00.")
    stored = Trajectory.objects.select_related("raw").get(pk=old.pk)  # read before the purge
    recent = factories.make_done_trajectory(retained)
    _age([old], 31)

    assert trajectory_steps_purge_expired() == {retained.pk: 1}

    (archive,) = (archive_dir / str(retained.public_id)).iterdir()
    assert archive.name.endswith(".jsonl.gz") and archive.stat().st_mode & 0o077 == 0
    (line,) = _archive_lines(archive)
    assert line["public_id"] == str(old.public_id) and line["external_id"] == "run-1"
    assert line["task"] == stored.task and line["input_format"] == "steps"
    assert line["steps"] == stored.steps and line["final_answer"] == "Sundays 12:00-17:00."
    assert line["created_at"].startswith((timezone.now() - timedelta(days=31)).strftime("%Y-%m-%d"))
    event = AuditEvent.objects.get(bank=retained, action="trajectory.purge_steps")
    assert event.after["archive"] == str(archive) and event.after["count"] == 1
    assert Trajectory.objects.get(pk=old.pk).steps == []
    assert Trajectory.objects.get(pk=recent.pk).steps == recent.steps

    # Another run, another file: a run never appends to an earlier run's archive.
    newer = factories.make_done_trajectory(retained)
    _age([newer], 35)
    assert trajectory_steps_purge_expired() == {retained.pk: 1}
    assert len(list((archive_dir / str(retained.public_id)).iterdir())) == 2


def test_a_failed_archive_keeps_the_steps_and_says_why(retained, archive_dir, caplog):
    archive_dir.mkdir()
    (archive_dir / str(retained.public_id)).write_text("not a directory")  # the archive cannot be created
    old = factories.make_done_trajectory(retained)
    _age([old], 31)

    with caplog.at_level(logging.ERROR, logger="trajectories.records.retention"):
        assert trajectory_steps_purge_expired() == {}

    old.refresh_from_db()
    assert old.steps and old.final_answer and not old.steps_purged
    assert not AuditEvent.objects.filter(action="trajectory.purge_steps").exists()
    failed = AuditEvent.objects.get(bank=retained, action="trajectory.purge_steps_fail")
    assert failed.after["count"] == 0 and "FileExistsError" in failed.after["error"]
    assert str(archive_dir / str(retained.public_id)) in failed.after["archive"]
    assert "could not be written" in caplog.text


def test_archive_off_purges_without_a_file(retained, settings, tmp_path):
    settings.RB_STEP_ARCHIVE_DIR = "off"
    old = factories.make_done_trajectory(retained)
    _age([old], 31)
    assert trajectory_steps_purge_expired() == {retained.pk: 1}
    assert AuditEvent.objects.get(action="trajectory.purge_steps").after["archive"] == ""


def _versions(table, ids):
    """Each row's physical place (ctid): a new row version, which adds an entry to every index, moves it."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, ctid::text FROM {table} WHERE id = ANY(%s)", [ids])
        return dict(cursor.fetchall())


def test_a_purge_deletes_records_and_writes_no_trajectory_row(retained, archive_dir):
    old = [factories.make_done_trajectory(retained, final_answer=f"Answer {i}") for i in range(5)]
    kept = factories.make_done_trajectory(retained)
    _age(old, 40)
    ids = [t.pk for t in [*old, kept]]
    before = _versions("trajectories_trajectory", ids)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'trajectories_trajectory'::regclass"
        )
        indexes = [name for (name,) in cursor.fetchall()]

    assert trajectory_steps_purge_expired(batch_size=2) == {retained.pk: 5}

    # Not one trajectory row was rewritten (so no index of the table gained an entry): the records went.
    assert _versions("trajectories_trajectory", ids) == before
    assert set(RawRecord.objects.filter(pk__in=ids).values_list("pk", flat=True)) == {kept.pk}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'trajectories_trajectory'::regclass"
        )
        assert "trajectory_purgeable" not in indexes and sorted(n for (n,) in cursor.fetchall()) == sorted(indexes)
    # One run on record, and every purged trajectory says it: when, and under which retention.
    (run,) = RetentionRun.objects.filter(bank=retained)
    assert run.purged == 5 and run.retention_days == 30 and str(run.archive).startswith(str(archive_dir))
    for t in old:
        t.refresh_from_db()
        assert t.steps_purged and t.steps == [] and t.final_answer == ""
        assert t.steps_purged_at == run.ran_at and t.steps_purged_days == 30
    kept.refresh_from_db()
    assert not kept.steps_purged and kept.steps_purged_at is None and kept.steps
