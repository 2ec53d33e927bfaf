"""Fill the retrievals' outcome counters and the Impact report's tallies
from the trajectories already stored (the same rebuild the service offers)."""

from django.db import migrations

# Raw SQL on the tables as of memories 0005; imported, not copied, so the
# migration and the service never disagree on what a tally row holds.
from trajectories.judging.verdicts import retrieval_outcomes_rebuild


def backfill(apps, schema_editor):
    for bank in apps.get_model("accounts", "Bank").objects.only("pk"):
        retrieval_outcomes_rebuild(bank=bank)


class Migration(migrations.Migration):
    dependencies = [
        ("trajectories", "0004_backfill_item_provenance"),
        ("memories", "0006_retrieval_outcomes_tallies"),
        ("accounts", "0005_bank_item_holdout_fraction"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
