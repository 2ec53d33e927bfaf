"""The declared status machine, and enqueueing by task name after commit."""

import ast
import logging
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from memories.items.experiences import experience_create
from reasoningbank_site import celery as celery_module
from reasoningbank_site.celery import app as celery_app
from reasoningbank_site.celery import enqueue_on_commit
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import Status, Trajectory
from trajectories.pipeline.transitions import (
    TRANSITIONS,
    IllegalTransition,
    trajectory_mark_needs_attention,
    trajectory_move,
    trajectory_move_many,
    trajectory_move_on,
    trajectory_take,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

TRAJECTORIES_APP = Path(__file__).resolve().parents[3] / "trajectories"


def test_every_status_has_a_row_in_the_table():
    assert set(TRANSITIONS) == set(Status.values)
    assert all(to in Status.values for targets in TRANSITIONS.values() for to in targets)


def test_a_move_sets_status_detail_and_updated_at(make_trajectory):
    t = make_trajectory()
    long_ago = timezone.now() - timedelta(hours=1)
    Trajectory.objects.filter(pk=t.pk).update(updated_at=long_ago)
    assert trajectory_move(t.pk, from_=Status.RECEIVED, to=Status.JUDGING, detail="reading") is True
    t.refresh_from_db()
    assert (t.status, t.status_detail) == (Status.JUDGING, "reading")
    assert t.updated_at > long_ago


def test_a_move_from_another_status_loses_quietly(make_trajectory):
    t = make_trajectory()
    assert trajectory_move(t.pk, from_=Status.JUDGED, to=Status.DISTILLING, detail="x") is False
    t.refresh_from_db()
    assert t.status == Status.RECEIVED


def test_a_move_writes_nulls_foreign_keys_and_takes_repeated_sources(make_trajectory, bank):
    """The moves the stages make: a take, a move that clears a field, a park,
    a lost move, and judged-and-taken-on with a new experience linked."""
    t = make_trajectory()
    experience = experience_create(bank=bank, task="Find the fare.")
    assert trajectory_take(t.pk, from_=[Status.RECEIVED, Status.AWAITING_LLM], to=Status.JUDGING, detail="a")
    assert trajectory_move(
        t.pk, from_=[Status.JUDGING, Status.JUDGING], to=Status.RECEIVED, detail="b", also={"enqueued_at": None}
    )
    assert trajectory_move(t.pk, from_=Status.RECEIVED, to=Status.AWAITING_LLM, detail="c")
    assert trajectory_move(t.pk, from_=Status.JUDGING, to=Status.JUDGED, detail="lost") is False
    t.refresh_from_db()
    assert (t.status, t.status_detail, t.enqueued_at) == (Status.AWAITING_LLM, "c", None)
    assert trajectory_move_on(
        t.pk,
        from_=[Status.AWAITING_LLM],
        via=Status.JUDGED,
        to=Status.DISTILLING,
        detail="f",
        also={"experience": experience},
    )
    t.refresh_from_db()
    assert (t.status, t.status_detail, t.experience_id) == (Status.DISTILLING, "f", experience.pk)


def test_an_undeclared_move_raises_and_changes_nothing(make_trajectory):
    t = make_trajectory()
    with pytest.raises(IllegalTransition):
        trajectory_move(t.pk, from_=Status.RECEIVED, to=Status.DONE, detail="skipping ahead")
    with pytest.raises(IllegalTransition):
        trajectory_move_many(Trajectory.objects.all(), from_=[Status.JUDGED, Status.DONE], to=Status.DISTILLING)
    t.refresh_from_db()
    assert (t.status, t.status_detail) == (Status.RECEIVED, "")


def test_needs_attention_leaves_a_finished_trajectory_alone(make_trajectory):
    waiting = make_trajectory(group_id="g1", group_size=3)
    other = make_trajectory(group_id="g1", task="second rollout")
    done = make_trajectory(task="finished")
    Trajectory.objects.filter(pk__in=[waiting.pk, other.pk]).update(status=Status.WAITING_GROUP)
    Trajectory.objects.filter(pk=done.pk).update(status=Status.DONE)
    trajectory_mark_needs_attention(trajectory_id=waiting.pk, detail="gave up")
    trajectory_mark_needs_attention(trajectory_id=done.pk, detail="gave up")
    statuses = dict(Trajectory.objects.values_list("pk", "status"))
    assert statuses == {waiting.pk: Status.NEEDS_ATTENTION, other.pk: Status.NEEDS_ATTENTION, done.pk: Status.DONE}


def test_enqueue_on_commit_runs_the_task_inline_in_eager_mode(
    fake_llm, make_trajectory, django_capture_on_commit_callbacks
):
    t = make_trajectory()
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        enqueue_on_commit("trajectories.process", t.pk)
    t.refresh_from_db()
    assert t.status == Status.RECEIVED and len(callbacks) == 1  # nothing before the commit
    callbacks[0]()
    t.refresh_from_db()
    assert t.status == Status.DONE, t.status_detail


def test_a_broker_error_is_logged_not_raised(monkeypatch, caplog, django_capture_on_commit_callbacks):
    task = celery_app.tasks["trajectories.process"]

    def broken(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(task, "apply_async", broken)
    monkeypatch.setitem(celery_module._broker_down_until, "until", 0.0)  # restored: later tests publish at once
    with caplog.at_level(logging.ERROR), django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("trajectories.process", 12345)
    assert "could not enqueue trajectories.process" in caplog.text


def _modules():
    return [p for p in TRAJECTORIES_APP.rglob("*.py") if "migrations" not in p.parts]


def test_no_import_inside_a_function_and_only_tasks_import_tasks():
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            # Django's AppConfig.ready() is where an app imports what needs the app registry loaded.
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (path.name, node.name) != (
                "apps.py",
                "ready",
            ):
                nested = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
                assert not nested, f"{path.name}: import inside {node.name}()"
            if isinstance(node, ast.ImportFrom) and path.name != "tasks.py":
                names = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
                assert not names & {"trajectories.tasks", "trajectories.pipeline.tasks"}, f"{path} imports tasks"


def test_only_transitions_set_updated_at():
    for path in _modules():
        if path.name != "transitions.py":
            assert "updated_at=" not in path.read_text(), path
