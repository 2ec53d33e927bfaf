"""The sweeper (trajectories.pipeline.sweeper): trajectories left waiting for an LLM
resume once one is configured, rows a dead worker left in judging or
distilling are redone without duplicates."""

import pytest

from memories.items.models import MemoryItem
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_FAILURE, JUDGE_SUCCESS
from trajectories.models import Judgment, Status, Trajectory
from trajectories.pipeline import judge, sweeper

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_no_llm_waits_then_resumes(no_llm, settings, make_trajectory, django_capture_on_commit_callbacks):
    t = process_trajectory(make_trajectory())
    assert t.status == Status.AWAITING_LLM
    assert "RB_LLM_BASE_URL" in t.status_detail

    report = sweeper.pipeline_sweep()
    assert report.resumed_awaiting_llm == []  # still no endpoint: nothing to do

    from tests.fake_llm import FakeLLM

    server = FakeLLM().start()
    try:
        settings.RB_LLM_BASE_URL = server.base_url
        server.reply(JUDGE_FAILURE).reply(ITEMS_MD)
        with django_capture_on_commit_callbacks(execute=True):
            report = sweeper.pipeline_sweep()
        assert report.resumed_awaiting_llm == [t.pk]
    finally:
        server.stop()
    t.refresh_from_db()
    assert t.status == Status.DONE and t.verdict == "failure"


def test_sweeper_redoes_a_trajectory_killed_mid_judging(fake_llm, make_trajectory, django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    t = make_trajectory()
    long_ago = timezone.now() - timedelta(hours=1)
    # A worker claimed it and died: the row is left in 'judging'.
    Trajectory.objects.filter(pk=t.pk).update(status=Status.JUDGING, updated_at=long_ago)
    fresh = make_trajectory(task="Another task", external_id="fresh")
    Trajectory.objects.filter(pk=fresh.pk).update(status=Status.JUDGING)  # recent: a live worker has it

    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    with django_capture_on_commit_callbacks(execute=True):
        report = sweeper.pipeline_sweep()
    assert report.stale_judging == [t.pk]
    t.refresh_from_db()
    fresh.refresh_from_db()
    assert t.status == Status.DONE and t.judgments.count() == 1
    assert fresh.status == Status.JUDGING


def test_sweeper_redoes_stuck_distilling_without_duplicates(
    fake_llm, make_trajectory, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    fake_llm.reply(JUDGE_SUCCESS)
    t = make_trajectory()
    judge.trajectory_judge(trajectory_id=t.pk)
    Trajectory.objects.filter(pk=t.pk).update(status=Status.DISTILLING, updated_at=timezone.now() - timedelta(hours=1))
    fake_llm.reply(ITEMS_MD)
    with django_capture_on_commit_callbacks(execute=True):
        report = sweeper.pipeline_sweep()
    assert report.stale_distilling == [t.pk]
    t.refresh_from_db()
    assert t.status == Status.DONE
    assert MemoryItem.objects.filter(bank=t.bank).count() == 2
    assert Judgment.objects.filter(trajectory=t).count() == 1


def test_a_judging_row_whose_worker_session_ended_is_resent_by_the_next_sweep_and_a_live_ones_is_not(
    fake_llm, settings, make_trajectory, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    settings.RB_PIPELINE_ORPHAN_SECONDS = 20
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid(), (SELECT max(pid) + 100000 FROM pg_stat_activity)")
        live, gone = cursor.fetchone()
    lost = make_trajectory()
    working = make_trajectory(task="Another task", external_id="working")
    half_a_minute_ago = timezone.now() - timedelta(seconds=30)  # far from RB_PIPELINE_STALE_SECONDS
    rows = Trajectory.objects.filter(pk__in=[lost.pk, working.pk])
    rows.update(status=Status.JUDGING, updated_at=half_a_minute_ago)
    Trajectory.objects.filter(pk=lost.pk).update(taken_by=gone)  # its worker's backend has ended
    Trajectory.objects.filter(pk=working.pk).update(taken_by=live)  # this session's: a live worker has it

    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    with django_capture_on_commit_callbacks(execute=True):
        report = sweeper.pipeline_sweep()
    assert report.orphaned == [lost.pk] and report.stale_judging == []
    lost.refresh_from_db()
    working.refresh_from_db()
    assert lost.status == Status.DONE and lost.judgments.count() == 1
    assert working.status == Status.JUDGING


def test_a_move_into_a_running_stage_records_the_backend_that_made_it(fake_llm, make_trajectory):
    from django.db import connection

    from trajectories.pipeline.transitions import trajectory_take

    t = make_trajectory()
    assert trajectory_take(t.pk, from_=Status.RECEIVED, to=Status.JUDGING)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    t.refresh_from_db()
    assert t.taken_by == pid


def test_the_lost_worker_rule_is_off_at_zero(settings, make_trajectory):
    from datetime import timedelta

    from django.utils import timezone

    settings.RB_PIPELINE_ORPHAN_SECONDS = 0
    t = make_trajectory()
    Trajectory.objects.filter(pk=t.pk).update(
        status=Status.JUDGING, taken_by=2**31 - 1, updated_at=timezone.now() - timedelta(seconds=30)
    )
    report = sweeper.pipeline_sweep()
    assert report.orphaned == []
    t.refresh_from_db()
    assert t.status == Status.JUDGING  # left to the stale rule
