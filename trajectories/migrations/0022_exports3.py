"""The judge evaluation set reads the bank's human-judged runs (verdict tier
human) from a partial index in (bank, created_at, id) order: each keyset chunk
is an index range read of its own rows, however many runs the bank holds
(trajectories.exports.datasets.judge_eval_rows).

Built with CREATE INDEX CONCURRENTLY (atomic = False): no lock that blocks
writes to trajectories while it builds; on a big table it takes a while, and a
failed build leaves an INVALID index to drop before migrating again."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("trajectories", "0021_counts_merge"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="trajectory",
            index=models.Index(
                condition=models.Q(("verdict_tier", 3)),
                fields=["bank", "created_at", "id"],
                name="trajectory_human_judged",
            ),
        ),
    ]
