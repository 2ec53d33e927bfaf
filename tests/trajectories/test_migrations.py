"""The data migration that gives items distilled before retrieval filters
their source trajectories' agent and metadata (trajectories 0003)."""

import importlib

import pytest
from django.apps import apps

from memories.items.models import MemoryItem
from tests import factories

pytestmark = pytest.mark.django_db

backfill = importlib.import_module("trajectories.migrations.0004_backfill_item_provenance")


def test_backfill_copies_agents_and_metadata_of_the_items_experience(bank, other_bank):
    a = factories.make_trajectory(bank, agent="bot-a", metadata={"env": "prod"}, group_id="g", group_size=2)
    b = factories.make_trajectory(bank, agent="bot-b", metadata={"env": "prod"}, group_id="g")
    lone = factories.make_trajectory(other_bank, agent="", metadata={})
    grouped = factories.propose_item(bank, a, title="From a group")
    b.experience = a.experience  # a MaTTS group shares one experience
    b.save(update_fields=["experience"])
    from_lone = factories.propose_item(other_bank, lone, title="From a run with no agent")
    manual = factories.propose_item(bank, None, title="Written by hand")
    # As they were before the migration: no provenance at all.
    MemoryItem.objects.update(source_agents=[], source_metadata=[])

    backfill.backfill_item_provenance(apps, None)

    grouped.refresh_from_db()
    assert (grouped.source_agents, grouped.source_metadata) == (["bot-a", "bot-b"], [{"env": "prod"}])
    for item in (from_lone, manual):
        item.refresh_from_db()
        assert (item.source_agents, item.source_metadata) == ([], [])
