"""Two judgment indexes for the dashboard: the human judgments by trajectory (partial: a few % of the rows;
the judge-agreement reads start from them) and every judgment by time (the recent activity's latest).

Built with CREATE INDEX CONCURRENTLY (non-atomic): judgments are a big table, and a plain CREATE INDEX would
block ingest and judging while it builds; this takes no lock that stops writes, only reads the table twice."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("trajectories", "0018_evaluation")]

    operations = [
        AddIndexConcurrently(
            model_name="judgment",
            index=models.Index(
                condition=models.Q(source="human"), fields=["trajectory", "created_at"], name="judgment_human_latest"
            ),
        ),
        AddIndexConcurrently(
            model_name="judgment",
            index=models.Index(fields=["created_at"], name="judgment_created"),
        ),
    ]
