"""The dashboard's maintained trajectory counts (trajectories.dashboard.counts): a trigger writes signed
delta rows on every write that moves a trajectory's (bank, day, status, verdict), a beat task merges them,
and the dashboard reads them instead of the bank's trajectories. Through each real write path (ingest via
the API, the pipeline, a relabel, a deletion, a bank's deletion, the retention purge, compaction), the sums
equal a COUNT(*) GROUP BY over the trajectories; the fill that the migration runs counts what was there."""

from __future__ import annotations

import importlib
import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.teams.banks import bank_update_settings
from tests import factories
from tests.factories import process_trajectory
from tests.trajectories.dashboard.test_dashboard_scale import seed
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.dashboard.counts import counts_compact
from trajectories.dashboard.models import TrajectoryCount
from trajectories.dashboard.selectors import status_counts, success_by_week
from trajectories.judging.verdicts import trajectory_relabel
from trajectories.models import Status, Trajectory
from trajectories.records.deletion import trajectory_delete
from trajectories.records.retention import trajectory_steps_purge_expired

pytestmark = pytest.mark.django_db

migration = importlib.import_module("trajectories.migrations.0020_counts")


def counted() -> dict[tuple, int]:
    """The maintained counts per (bank, day, status, verdict), keys summing to zero left out."""
    rows = TrajectoryCount.objects.values_list("bank_id", "day", "status", "verdict").annotate(n=Sum("n")).order_by()
    return {tuple(key): n for *key, n in rows if n}


def recounted() -> dict[tuple, int]:
    """The same, counted from the trajectories themselves."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT bank_id, (created_at AT TIME ZONE 'UTC')::date, status, verdict, COUNT(*) "
            "FROM trajectories_trajectory GROUP BY 1, 2, 3, 4"
        )
        return {tuple(key): n for *key, n in cursor.fetchall()}


def assert_exact() -> None:
    assert counted() == recounted()


def _answer_everything(fake_llm) -> None:
    fake_llm.responder = lambda messages: (
        JUDGE_SUCCESS if "accomplished the task" in messages[-1]["content"] else ITEMS_MD
    )


def test_ingest_via_the_api_and_the_pipeline_are_counted(client, auth, bank, fake_llm):
    _answer_everything(fake_llm)
    body = {"task": "Find the opening hours", "steps": [{"kind": "thought", "content": "look it up"}]}
    for _ in range(2):
        response = client.post("/api/v1/trajectories", json.dumps(body), content_type="application/json", **auth)
        assert response.status_code == 202, response.content
    assert dict((s, n) for s, _, n in status_counts(bank=bank))[Status.RECEIVED] == 2
    assert_exact()
    first = Trajectory.objects.filter(bank=bank).order_by("pk").first()
    done = process_trajectory(first)  # the real task: received -> judging -> judged -> distilling -> done
    assert done.status == Status.DONE and done.verdict == "success", done.status_detail
    counts = dict((s, n) for s, _, n in status_counts(bank=bank))
    assert (counts[Status.RECEIVED], counts[Status.DONE], counts[Status.JUDGING]) == (1, 1, 0)
    assert_exact()


def test_a_relabel_moves_the_verdict_and_the_success_chart(bank, owner):
    trajectory = factories.make_done_trajectory(bank)
    factories.record_verdict(trajectory, "success")
    assert success_by_week(bank=bank)[-1].x == 1
    trajectory.refresh_from_db()
    trajectory_relabel(trajectory=trajectory, label="failure", reason="It made the hours up.", author=owner)
    week = success_by_week(bank=bank)[-1]
    assert (week.x, week.n) == (0, 1)
    assert_exact()


def test_bulk_updates_deletions_and_a_banks_deletion_are_counted(bank, other_bank, owner):
    kept = [factories.make_trajectory(other_bank) for _ in range(2)]
    mine = [factories.make_trajectory(bank) for _ in range(3)]
    # The pipeline's bulk .update()s, and a moved arrival date (a different day key).
    Trajectory.objects.filter(bank=bank).update(status=Status.NEEDS_ATTENTION, verdict="failure")
    Trajectory.objects.filter(pk=mine[0].pk).update(created_at=timezone.now() - timedelta(days=20))
    assert_exact()
    trajectory_delete(trajectory=mine[1], user=owner)
    assert dict((s, n) for s, _, n in status_counts(bank=bank))[Status.NEEDS_ATTENTION] == 2
    assert_exact()
    bank_pk = bank.pk
    bank.delete()
    assert_exact()
    assert not any(key[0] == bank_pk for key in counted())
    counts_compact()
    assert not TrajectoryCount.objects.filter(bank_id=bank_pk).exists()  # its rows summed to zero: dropped
    assert sum(n for s, _, n in status_counts(bank=other_bank)) == len(kept)
    assert_exact()


def test_the_retention_purge_writes_no_count(bank, owner):
    bank_update_settings(bank=bank, actor=owner, step_retention_days=30)
    old = [factories.make_done_trajectory(bank) for _ in range(2)]
    Trajectory.objects.filter(pk__in=[t.pk for t in old]).update(created_at=timezone.now() - timedelta(days=40))
    counts_compact()
    before = TrajectoryCount.objects.count()
    assert trajectory_steps_purge_expired() == {bank.pk: 2}
    assert TrajectoryCount.objects.count() == before  # the key did not move: not a row written
    assert_exact()


def test_compaction_merges_to_one_row_per_key_and_keeps_the_sums(bank, other_bank):
    for _ in range(3):
        factories.make_trajectory(bank)
    factories.make_trajectory(other_bank)
    Trajectory.objects.filter(bank=bank).update(status=Status.DONE, verdict="success")
    Trajectory.objects.filter(bank=bank).update(status=Status.NEEDS_ATTENTION)
    assert TrajectoryCount.objects.count() > len(recounted())
    counts_compact()
    assert TrajectoryCount.objects.count() == len(recounted())  # one row per key, the zeros dropped
    assert_exact()
    assert counts_compact() == len(recounted())  # again: nothing changes
    assert_exact()


def test_the_migrations_fill_counts_what_was_there(bank, other_bank, owner):
    seed(bank, owner, 300)
    factories.make_done_trajectory(other_bank)
    before = recounted()
    TrajectoryCount.objects.all().delete()  # as before the migration: no rows
    with connection.cursor() as cursor:
        fill = next(op for op in migration.Migration.operations if op.__class__.__name__ == "RunSQL")
        cursor.execute(fill.sql)
    assert counted() == before == recounted()
    assert sum(before.values()) == Trajectory.objects.count()


def test_compaction_is_a_beat_task():
    entry = next(e for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == "trajectories.compact_counts")
    assert entry["schedule"] <= 300


def _plan(sql, params) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_the_dashboards_counts_and_success_chart_read_no_trajectory(bank, owner):
    seed(bank, owner, 2000)
    counts_compact()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE trajectories_trajectory; ANALYZE trajectories_trajectorycount")
    with CaptureQueriesContext(connection) as queries:
        counts = status_counts(bank=bank)
        weeks = success_by_week(bank=bank)
    assert dict((s, n) for s, _, n in counts)[Status.DONE] == 2000
    assert sum(w.n for w in weeks) == Trajectory.objects.filter(bank=bank).exclude(verdict="").count()
    for query in queries.captured_queries:
        plan = _plan(query["sql"], None)
        assert "trajectories_trajectory " not in plan and "trajectories_trajectory\n" not in plan, plan
        assert "trajectorycount" in query["sql"]


def test_a_bulk_insert_writes_one_row_per_key_not_per_trajectory(bank, owner):
    seed(bank, owner, 500)  # one INSERT ... SELECT of 500 trajectories over two days and two verdicts
    assert TrajectoryCount.objects.filter(bank=bank).count() == len(recounted()) < 10
    assert_exact()
