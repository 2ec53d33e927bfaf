"""The keys most trajectories may not have (a token, an experience, a MaTTS
group, a task id) are indexed only where present, and every lookup by one
reads that partial index: a plan each, on a seeded table where the missing
key is the common case."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import ApiToken
from memories.items.experiences import Experience
from tests import factories
from trajectories.models import Trajectory
from trajectories.records.steps import trajectory_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(bank, other_bank):
    """3,000 runs per bank with no token, experience or group; in ``bank``, 20 groups of 3, 30 runs of one
    experience and 30 sent with one token."""
    factories.make_token(bank, name="agent")
    token = ApiToken.objects.get(bank=bank, name="agent")
    experience = Experience.objects.create(bank=bank, task="Find the hours")
    for target in (bank, other_bank):
        Trajectory.objects.bulk_create(Trajectory(bank=target, task=f"t{i}", steps=[]) for i in range(3000))
    Trajectory.objects.bulk_create(
        Trajectory(bank=bank, task=f"g{i}", steps=[], group_id=f"group-{i // 3}", group_size=3) for i in range(60)
    )
    Trajectory.objects.bulk_create(Trajectory(bank=bank, task="e", steps=[], experience=experience) for _ in range(30))
    Trajectory.objects.bulk_create(Trajectory(bank=bank, task="k", steps=[], token=token) for _ in range(30))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE trajectories_trajectory")
    return token, experience


def _plan(sql: str, params=()) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_a_group_s_members_are_read_from_the_partial_group_index(bank, seeded):
    with CaptureQueriesContext(connection) as queries:
        group = trajectory_group(bank=bank, group_id="group-7")
    assert group.members == 3 and {r.trajectory.task for r in group.rollouts} == {"g21", "g22", "g23"}
    members = [q["sql"] for q in queries if 'FROM "trajectories_trajectory"' in q["sql"] and "group-7" in q["sql"]]
    assert members
    for sql in members:
        assert "trajectory_group" in _plan(sql), sql


def test_a_deleted_token_s_runs_are_found_through_the_partial_token_index(bank, seeded):
    token, _ = seeded
    token_pk = token.pk
    with CaptureQueriesContext(connection) as queries:
        token.delete()  # its runs keep their record, without the token (SET_NULL)
    assert not Trajectory.objects.filter(token_id=token_pk).exists()
    assert Trajectory.objects.filter(bank=bank, task="k", token__isnull=True).count() == 30
    (update,) = [q["sql"] for q in queries if q["sql"].startswith('UPDATE "trajectories_trajectory" SET "token_id"')]
    plan = _plan(update)
    assert "trajectory_token" in plan, plan


def test_an_experience_s_runs_are_found_through_the_partial_experience_index(seeded):
    _, experience = seeded
    plan = Trajectory.objects.filter(experience=experience).explain()
    assert "trajectory_experience" in plan, plan
    assert Trajectory.objects.filter(experience=experience).count() == 30


def test_no_full_index_of_those_keys_is_left():
    """A full index of one of them is what a purge grew (one value held by most rows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indexrelid::regclass::text, pg_get_expr(i.indpred, i.indrelid) FROM pg_index i"
            " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
            " WHERE i.indrelid = 'trajectories_trajectory'::regclass"
            " AND a.attname IN ('token_id', 'experience_id', 'group_id', 'task_id')"
        )
        indexes = dict(cursor.fetchall())
    assert indexes == {
        "trajectory_token": "(token_id IS NOT NULL)",
        "trajectory_experience": "(experience_id IS NOT NULL)",
        "trajectory_group": "(NOT ((group_id)::text = ''::text))",
        "trajectory_task": "(NOT ((task_id)::text = ''::text))",
    }
