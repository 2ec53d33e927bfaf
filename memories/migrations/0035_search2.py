"""The review queue's order as one index, (bank, status, created_at, id): a deep
queue page reads the keys its OFFSET skips from this index alone (an
index-only scan), where (bank, status, created_at) read each skipped row from
the table to learn its id and sort ties.

Built with CREATE INDEX CONCURRENTLY (non-atomic): memory items are a big
table, and a plain CREATE INDEX would block distillation and review while it
builds."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memories", "0034_impact_merge")]

    operations = [
        AddIndexConcurrently(
            model_name="memoryitem",
            index=models.Index(fields=["bank", "status", "created_at", "id"], name="memoryitem_queue_order"),
        ),
    ]
