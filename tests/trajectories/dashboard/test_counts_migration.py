"""The upgrade that adds the maintained trajectory counts fills them from the trajectories already there:
after it, the counts equal a COUNT(*) GROUP BY over the trajectories, bank by bank, and a trajectory
written after it is counted by the trigger."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests import factories
from tests.trajectories.dashboard.test_counts import assert_exact, recounted
from tests.trajectories.dashboard.test_dashboard_scale import seed
from trajectories.dashboard.models import TrajectoryCount
from trajectories.dashboard.selectors import status_counts

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("trajectories", "0019_dash")]


def test_the_upgrade_counts_the_trajectories_already_there(bank, other_bank, owner):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(BEFORE)  # no table, no trigger: trajectories written now are counted by the fill alone
    try:
        seed(bank, owner, 400)
        seed(other_bank, owner, 150, start=400)
        with connection.cursor() as cursor:
            cursor.execute("UPDATE trajectories_trajectory SET status = 'needs_attention' WHERE id % 7 = 0")
        before = recounted()
    finally:
        call_command("migrate", verbosity=0)
    assert recounted() == before and sum(before.values()) == 550
    assert_exact()
    assert TrajectoryCount.objects.count() == len(before)  # one row per key
    factories.make_trajectory(bank)
    assert sum(n for _, _, n in status_counts(bank=bank)) == 401
    assert_exact()
