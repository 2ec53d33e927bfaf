"""The upgrade that gives releases ``whole_draft`` marks the releases that were
written from the whole draft (published by hand, imported, or a bank's first)
and no other, and loses no release."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories.releases.models import Release

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("memories", "0032_evaluation_merge")]


def test_releases_written_from_the_whole_draft_are_marked_and_none_is_lost(bank):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE[0]).apps.get_model("memories", "Release")
        sources = ["automatic", "automatic", "published", "automatic", "imported"]
        for number, source in enumerate(sources, start=1):
            old.objects.create(bank_id=bank.pk, number=number, source=source, item_count=number)
        before = list(old.objects.filter(bank_id=bank.pk).order_by("number").values_list("number", "item_count"))
    finally:
        call_command("migrate", verbosity=0)
    rows = Release.objects.filter(bank=bank).order_by("number")
    assert list(rows.values_list("number", "item_count")) == before
    assert list(rows.values_list("whole_draft", flat=True)) == [True, False, True, False, True]
