"""The Impact tallies' monthly roll-ups (memories.serving.rollups): a
``monthly`` flag on RetrievalTally and the partial index on the daily rows
that the roll-up reads; a covering index for the items' sums (an index-only
scan of one bank's window). The existing rows stay daily; the beat task
(``memories.compact_tallies``) rolls up the old months on its first run.

Locks: adding a column with a constant default is a catalog change (no table
rewrite, a brief ACCESS EXCLUSIVE lock); the index is built CONCURRENTLY (no
lock on writers), so the migration is not atomic."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("memories", "0032_evaluation_merge"),
    ]

    operations = [
        migrations.AddField(
            model_name="retrievaltally",
            name="monthly",
            field=models.BooleanField(default=False),
        ),
        AddIndexConcurrently(
            model_name="retrievaltally",
            index=models.Index(condition=models.Q(("monthly", False)), fields=["day"], name="tally_daily"),
        ),
        AddIndexConcurrently(
            model_name="retrievaltally",
            index=models.Index(
                condition=models.Q(("item__isnull", False)),
                fields=["bank", "day"],
                include=["holdout_fraction", "item", "side", "units", "y_sum", "judged", "successes"],
                name="tally_bank_day_items",
            ),
        ),
    ]
