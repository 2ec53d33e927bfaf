"""The upgrade that adds the maintained item counts fills them from the items already there: after it, the
counts equal a COUNT(*) GROUP BY over the items, bank by bank, and an item written after it is counted by the
triggers. Going back drops the table and the triggers."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories.items.models import ItemStatus, MemoryItem, MemoryItemCount
from tests import factories
from tests.memories.test_item_counts import assert_exact, recounted
from trajectories.dashboard.selectors import review_backlog

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("memories", "0040_impactsums")]


def _tables() -> set[str]:
    return set(connection.introspection.table_names())


def test_the_upgrade_counts_the_items_already_there_and_goes_back(bank, other_bank):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(BEFORE)  # no table, no trigger: items written now are counted by the fill alone
    try:
        assert "memories_memoryitemcount" not in _tables()
        factories.bulk_items(bank, 250)
        factories.make_items(bank, 120)
        factories.make_items(other_bank, 30, status=ItemStatus.REJECTED)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memories_memoryitem SET needs_review_reason = 'look again' WHERE status = 'approved' AND id % 10 = 0"
            )
        before = recounted()
    finally:
        call_command("migrate", verbosity=0)
    assert recounted() == before and sum(before.values()) == 400
    assert_exact()
    assert MemoryItemCount.objects.count() == len(before)  # one row per key
    assert review_backlog(bank=bank) == {
        "proposed": 250,
        "flagged": before[(bank.pk, "approved", True)],
        "approved": 120,
    }
    factories.bulk_items(bank, 1)
    assert review_backlog(bank=bank)["proposed"] == 251
    assert_exact()

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(BEFORE)
    try:
        assert "memories_memoryitemcount" not in _tables()
        factories.bulk_items(bank, 2)  # no trigger left behind to write into a missing table
        assert MemoryItem.objects.filter(bank=bank).count() == 373
    finally:
        call_command("migrate", verbosity=0)
