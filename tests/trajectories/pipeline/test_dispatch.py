"""Nothing stuck: the row is the queue entry (``enqueued_at``), the
dispatcher sends what a failed publish left, the sweeper never re-sends what
is queued or scheduled, each stage has its own LLM retry budget, and a stage
that runs out on temporary errors waits for the endpoint (not for a human):
resumed by the sweeper once a probe answers, by the Retry button, or by
``rb_resume --retry-transient``."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.models import AuditEvent
from reasoningbank_site import celery as celery_module
from tests.conftest import queued_tasks
from tests.factories import process_trajectory
from tests.fake_llm import Scripted
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import Judgment, Status, Trajectory
from trajectories.pipeline import dispatch, sweeper

pytestmark = pytest.mark.django_db


def _parked(make_trajectory, fake_llm, settings) -> Trajectory:
    """A trajectory whose judge ran out of retries on 503s."""
    settings.RB_LLM_MAX_RETRIES = 1
    fake_llm.error(503, "overloaded").error(503, "overloaded")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.AWAITING_LLM and dispatch.is_parked(t), t.status_detail
    return t


def _answer_everything(fake_llm) -> None:
    fake_llm.responder = lambda messages: (
        JUDGE_SUCCESS if "accomplished the task" in messages[-1]["content"] else ITEMS_MD
    )


# --- per-stage budgets, transient vs permanent ------------------------------------------------


@pytest.mark.usefixtures("eager_celery")
def test_each_stage_has_its_own_retry_budget(fake_llm, settings, make_trajectory):
    settings.RB_LLM_MAX_RETRIES = 2
    # The judge spends its whole budget (2 retries), then the distiller needs 2 retries of its own.
    fake_llm.error(503).error(429).reply(JUDGE_SUCCESS).error(500).error(502).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE, t.status_detail
    assert (t.judge_attempts, t.distill_attempts) == (2, 2)
    assert t.experience.items.count() == 2
    assert len(fake_llm.requests) == 6


@pytest.mark.usefixtures("eager_celery")
def test_a_200_that_is_not_json_is_transient(fake_llm, make_trajectory):
    fake_llm.script.append(Scripted(status=200, raw_body=b"<html>502 Bad Gateway</html>"))
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE, t.status_detail
    assert t.judge_attempts == 1 and t.verdict == "success"


@pytest.mark.usefixtures("eager_celery")
def test_a_permanent_error_still_needs_a_human(fake_llm, make_trajectory):
    fake_llm.error(401, "bad key")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.NEEDS_ATTENTION and "401" in t.status_detail
    assert not dispatch.is_parked(t)


# --- resuming a parked trajectory ---------------------------------------------------------------


@pytest.mark.usefixtures("eager_celery")
def test_sweeper_resumes_a_parked_trajectory_only_when_due_and_the_endpoint_answers(
    fake_llm, settings, make_trajectory, django_capture_on_commit_callbacks
):
    t = _parked(make_trajectory, fake_llm, settings)
    assert t.retry_at > timezone.now() + timedelta(seconds=settings.RB_LLM_RESUME_AFTER - 30)
    calls = len(fake_llm.requests)
    _answer_everything(fake_llm)

    with django_capture_on_commit_callbacks(execute=True):
        report = sweeper.pipeline_sweep(stale_seconds=0)
    assert report.resumed_awaiting_llm == [] and fake_llm.probes == 0  # not due: not even probed
    Trajectory.objects.filter(pk=t.pk).update(retry_at=timezone.now() - timedelta(seconds=1))

    fake_llm.down = True
    with django_capture_on_commit_callbacks(execute=True):
        report = sweeper.pipeline_sweep(stale_seconds=0)
    assert report.resumed_awaiting_llm == [] and fake_llm.probes == 1  # one probe, no judge call
    assert len(fake_llm.requests) == calls

    fake_llm.down = False
    with django_capture_on_commit_callbacks(execute=True):
        report = sweeper.pipeline_sweep(stale_seconds=0)
    assert report.resumed_awaiting_llm == [t.pk]
    t.refresh_from_db()
    assert t.status == Status.DONE and t.verdict == "success", t.status_detail
    assert t.judge_attempts == 0  # resumed with a fresh budget


@pytest.mark.usefixtures("eager_celery")
def test_retry_button_resumes_it_now_and_is_audited(
    client, owner, viewer, fake_llm, settings, make_trajectory, django_capture_on_commit_callbacks
):
    t = _parked(make_trajectory, fake_llm, settings)
    detail = reverse("trajectories:detail", kwargs={"bank_id": t.bank.public_id, "trajectory_id": t.public_id})
    retry = reverse("trajectories:retry", kwargs={"bank_id": t.bank.public_id, "trajectory_id": t.public_id})

    client.force_login(viewer)
    assert retry not in client.get(detail).content.decode()  # viewers see no button
    assert client.post(retry).status_code == 403

    client.force_login(owner)
    page = client.get(detail).content.decode()
    assert retry in page and "gave up after 2 attempts" in page
    assert client.get(retry).status_code == 405
    _answer_everything(fake_llm)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(retry)
    assert response.status_code == 302 and response["Location"] == detail
    t.refresh_from_db()
    assert t.status == Status.DONE and t.verdict == "success", t.status_detail
    event = AuditEvent.objects.get(action="trajectory.retry")
    assert event.actor_user_id == owner.pk and event.before["status"] == Status.AWAITING_LLM

    # Nothing to retry any more: it says so and changes nothing.
    page = client.post(retry, follow=True).content.decode()
    assert "Only a trajectory waiting after temporary LLM errors can be retried" in page
    assert Judgment.objects.filter(trajectory=t).count() == 1


@pytest.mark.usefixtures("eager_celery")
def test_rb_resume_retry_transient(fake_llm, settings, make_trajectory, django_capture_on_commit_callbacks):
    t = _parked(make_trajectory, fake_llm, settings)
    _answer_everything(fake_llm)
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("rb_resume", stdout=out)
    t.refresh_from_db()
    assert t.status == Status.AWAITING_LLM  # plain rb_resume waits for retry_at like the sweeper
    with django_capture_on_commit_callbacks(execute=True):
        call_command("rb_resume", "--retry-transient", stdout=out)
    assert f"retried 1 trajectory and 0 MaTTS groups parked after temporary LLM errors: [{t.pk}]" in (out.getvalue())
    t.refresh_from_db()
    assert t.status == Status.DONE, t.status_detail


@pytest.mark.usefixtures("eager_celery")
def test_a_parked_matts_group_resumes_together(
    fake_llm, settings, bank, make_trajectory, django_capture_on_commit_callbacks
):
    settings.RB_LLM_MAX_RETRIES = 0
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    a = process_trajectory(make_trajectory(group_id="g1", group_size=2, outcome="success"))
    fake_llm.error(503)  # the contrast of the complete group, run by the second member's task
    b = process_trajectory(make_trajectory(group_id="g1", outcome="failure", final_answer="cached"))
    rows = Trajectory.objects.filter(pk__in=[a.pk, b.pk])
    assert set(rows.values_list("status", flat=True)) == {Status.WAITING_GROUP}
    assert all(dispatch.is_parked(m) for m in rows), [m.status_detail for m in rows]
    assert "Contrast distillation gave up after 1 attempts" in b.status_detail

    fake_llm.reply(ITEMS_MD)
    with django_capture_on_commit_callbacks(execute=True):
        dispatch.trajectory_retry(trajectory=a, author=None)
    assert set(rows.values_list("status", flat=True)) == {Status.DONE}
    assert set(rows.values_list("contrast_attempts", flat=True)) == {0}


# --- what the sweeper and the dispatcher send ---------------------------------------------------


def test_sweeper_never_resends_a_queued_row_and_honours_a_scheduled_retry(
    make_trajectory, broker_queue, django_capture_on_commit_callbacks
):
    before = broker_queue.snapshot()
    long_ago = timezone.now() - timedelta(hours=1)
    queued = make_trajectory(task="queued a moment ago")
    scheduled = make_trajectory(task="retry in ten minutes")
    lost = make_trajectory(task="queued an hour ago, message lost")
    Trajectory.objects.filter(pk__in=[queued.pk, scheduled.pk, lost.pk]).update(updated_at=long_ago)
    Trajectory.objects.filter(pk=lost.pk).update(enqueued_at=long_ago)
    Trajectory.objects.filter(pk=scheduled.pk).update(
        enqueued_at=long_ago, retry_at=timezone.now() + timedelta(minutes=10)
    )

    with django_capture_on_commit_callbacks(execute=True):
        first = sweeper.pipeline_sweep(stale_seconds=600)
        second = sweeper.pipeline_sweep(stale_seconds=600)
    assert first.never_picked_up == [lost.pk]
    assert second.never_picked_up == []  # it was just queued
    assert queued_tasks(broker_queue, before) == [("trajectories.process", f"({lost.pk},)")]


def test_a_failed_publish_is_sent_by_the_dispatcher_once(
    make_trajectory, broker_queue, settings, monkeypatch, django_capture_on_commit_callbacks
):
    before = broker_queue.snapshot()
    settings.RB_BROKER_RETRY_AFTER = 60.0
    monkeypatch.setitem(celery_module._broker_down_until, "until", 0.0)
    monkeypatch.setattr(celery_module, "_publish", lambda task, args: (_ for _ in ()).throw(ConnectionError("down")))
    with django_capture_on_commit_callbacks(execute=True):
        t = make_trajectory()
        other = make_trajectory(task="Second while the broker is known down", external_id="second")
    monkeypatch.undo()
    t.refresh_from_db()
    other.refresh_from_db()
    assert t.enqueued_at is None and other.enqueued_at is None  # the failure hook unmarked both
    assert queued_tasks(broker_queue, before) == []

    with django_capture_on_commit_callbacks(execute=True):
        assert sorted(dispatch.pipeline_dispatch()) == sorted([t.pk, other.pk])
        assert dispatch.pipeline_dispatch() == []  # queued now: not sent again
    assert sorted(queued_tasks(broker_queue, before)) == sorted(
        [("trajectories.process", f"({t.pk},)"), ("trajectories.process", f"({other.pk},)")]
    )
    t.refresh_from_db()
    assert t.enqueued_at is not None


def test_beat_housekeeping_runs_on_its_own_queue(settings):
    names = {q.name for q in celery_module.app.conf.task_queues}
    assert names == {"celery", "maintenance", "webhooks", "bulk"}
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert celery_module.app.amqp.router.route({}, entry["task"])["queue"].name == "maintenance", entry["task"]
    assert celery_module.app.amqp.router.route({}, "trajectories.process")["queue"].name == "celery"
    assert celery_module.app.amqp.router.route({}, "trajectories.process_many")["queue"].name == "celery"


def test_a_batch_is_one_message_that_a_worker_fans_out_to_the_rows_not_yet_picked_up(
    make_trajectory, broker_queue, monkeypatch, django_capture_on_commit_callbacks
):
    rows = [make_trajectory(task=f"batch item {n}", external_id=f"b{n}") for n in range(4)]
    ids = [t.pk for t in rows]
    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        dispatch.trajectories_enqueue(ids)
    assert queued_tasks(broker_queue, before) == [("trajectories.process_many", f"({ids},)")]

    # Redelivered after a worker took one row and the agent deleted another: only the others are sent.
    Trajectory.objects.filter(pk=ids[1]).update(status=Status.JUDGING)
    Trajectory.objects.filter(pk=ids[2]).delete()
    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        assert dispatch.trajectories_fan_out(trajectory_ids=ids) == [ids[0], ids[3]]
    assert sorted(queued_tasks(broker_queue, before)) == sorted(
        ("trajectories.process", f"({pk},)") for pk in (ids[0], ids[3])
    )

    # The batch's one publish fails: every row is left to the dispatcher.
    monkeypatch.setitem(celery_module._broker_down_until, "until", 0.0)
    monkeypatch.setattr(celery_module, "_publish", lambda task, args: (_ for _ in ()).throw(ConnectionError("down")))
    with django_capture_on_commit_callbacks(execute=True):
        dispatch.trajectories_enqueue([ids[0], ids[3]])
    monkeypatch.undo()
    assert set(Trajectory.objects.filter(pk__in=ids).values_list("pk", "enqueued_at")) == {
        (ids[0], None),
        (ids[1], rows[1].enqueued_at),
        (ids[3], None),
    }


def test_the_happy_path_marks_the_queue_entry_in_the_insert_itself(
    make_trajectory, broker_queue, django_capture_on_commit_callbacks
):
    before = broker_queue.snapshot()
    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks(execute=True):
        t = make_trajectory()
    writes = [q["sql"] for q in queries if "trajectories_trajectory" in q["sql"] and not q["sql"].startswith("SELECT")]
    # the one write is the insert, no UPDATE after it
    insert = 'INSERT INTO "trajectories_trajectory"'
    assert len(writes) == 1 and insert in writes[0] and "UPDATE" not in writes[0] and "enqueued_at" in writes[0], writes
    assert queued_tasks(broker_queue, before) == [("trajectories.process", f"({t.pk},)")]
    t.refresh_from_db()
    assert t.enqueued_at is not None
