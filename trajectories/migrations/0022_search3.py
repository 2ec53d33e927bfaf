"""A covering index of the human judgments by time: the reviewers page reads a period's verdicts from the index
alone. Built CONCURRENTLY (atomic = False): a plain CREATE INDEX would block judging while it builds."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("trajectories", "0021_counts_merge")]

    operations = [
        AddIndexConcurrently(
            model_name="judgment",
            index=models.Index(
                condition=models.Q(("author__isnull", False), ("source", "human")),
                fields=["created_at"],
                include=["trajectory", "author", "label", "id"],
                name="judgment_human_created",
            ),
        ),
    ]
