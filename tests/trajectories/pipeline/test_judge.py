"""The judge stage (trajectories.pipeline.judge)."""

import pytest

from tests.factories import process_trajectory
from trajectories.models import Status, Trajectory
from trajectories.pipeline import judge

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_concurrent_claim_loses_quietly(fake_llm, make_trajectory):
    t = make_trajectory()
    Trajectory.objects.filter(pk=t.pk).update(status=Status.JUDGING)  # another worker has it
    assert judge.trajectory_judge(trajectory_id=t.pk) is False
    process_trajectory(t)
    assert t.status == Status.JUDGING and not fake_llm.requests
