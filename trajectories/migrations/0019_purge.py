"""Retention's batch select reads a partial index of the rows it may still
purge (finished, steps not yet purged), in (bank, created_at, id) order: each
hourly run reads only those rows, never the already purged ones, and each
batch starts where the last one stopped (trajectories.records.retention).

Built with CREATE INDEX CONCURRENTLY (atomic = False): no lock that blocks
writes to trajectories while it builds; on a big table it takes a while, and a
failed build leaves an INVALID index to drop before migrating again."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("trajectories", "0018_evaluation"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="trajectory",
            index=models.Index(
                condition=models.Q(("status__in", ["done", "needs_attention"]), ("steps_purged_at__isnull", True)),
                fields=["bank", "created_at", "id"],
                name="trajectory_purgeable",
            ),
        ),
    ]
