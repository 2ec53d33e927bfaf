"""The upgrade that gives releases ``first_served_at`` marks every release written before it served
from its creation (each was labelled production or canary when it was written), so a rollback to any
of them is never held by the evaluation gate."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories.releases.models import Release

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("memories", "0030_evaluation_contract")]


def _executor() -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    return executor


def test_releases_written_before_the_field_count_as_served_since_their_creation(bank):
    executor = _executor()
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE[0]).apps.get_model("memories", "Release")
        for number in (1, 2):
            old.objects.create(bank_id=bank.pk, number=number, source="automatic")
    finally:
        call_command("migrate", verbosity=0)
    rows = list(Release.objects.filter(bank=bank).order_by("number").values_list("created_at", "first_served_at"))
    assert len(rows) == 2 and all(served == created for created, served in rows)
