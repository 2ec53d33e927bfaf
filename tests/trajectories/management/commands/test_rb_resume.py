"""rb_resume: what the sweeper does, on demand, reported line by line; with
--retry-transient, rows parked after temporary LLM errors resume at once."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import Status, Trajectory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_rb_resume_command_reports(fake_llm, make_trajectory, django_capture_on_commit_callbacks):
    t = make_trajectory()
    # As a move to awaiting_llm leaves it: nothing queued for it.
    Trajectory.objects.filter(pk=t.pk).update(status=Status.AWAITING_LLM, enqueued_at=None)
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("rb_resume", stdout=out)
    assert f"resumed 1 trajectory awaiting an LLM: [{t.pk}]" in out.getvalue()
    t.refresh_from_db()
    assert t.status == Status.DONE


def test_rb_resume_says_trajectories_not_trajectory_ies(settings):
    settings.RB_LLM_BASE_URL = ""
    out = io.StringIO()
    call_command("rb_resume", stdout=out)
    text = out.getvalue()
    assert "0 trajectories" in text and "0 actions enqueued." in text
    assert "(ies)" not in text and "(s)" not in text


def test_retry_transient_resumes_a_parked_row_now_and_a_plain_run_leaves_it_parked(
    fake_llm, make_trajectory, django_capture_on_commit_callbacks
):
    t = make_trajectory()
    # Parked after temporary LLM errors, its resume time an hour away.
    parked = {"status": Status.AWAITING_LLM, "enqueued_at": None, "retry_at": timezone.now() + timedelta(hours=1)}
    Trajectory.objects.filter(pk=t.pk).update(**parked)
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)

    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("rb_resume", stdout=out)
    assert "resumed 0 trajectories awaiting an LLM" in out.getvalue()
    t.refresh_from_db()
    assert t.status == Status.AWAITING_LLM

    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("rb_resume", "--retry-transient", stdout=out)
    assert f"retried 1 trajectory and 0 MaTTS groups parked after temporary LLM errors: [{t.pk}]" in out.getvalue()
    t.refresh_from_db()
    assert t.status == Status.DONE and t.retry_at is None
