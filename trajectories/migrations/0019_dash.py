"""Three indexes for the dashboard: the human judgments by trajectory (partial: a few % of the rows; the
judge-agreement reads start from them), every judgment by time (the recent activity's latest), and the
trajectories whose agent and verdict disagree (partial; the dashboard's count, the list's filter).

Built with CREATE INDEX CONCURRENTLY (non-atomic): judgments and trajectories are big tables, and a plain
CREATE INDEX would block ingest and judging while it builds; this takes no lock that stops writes, it only
reads the table twice."""

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
        AddIndexConcurrently(
            model_name="trajectory",
            index=models.Index(
                condition=models.Q(("outcome", "success"), ("verdict", "failure"))
                | models.Q(("outcome", "failure"), ("verdict", "success")),
                fields=["bank", "created_at"],
                name="trajectory_disagree",
            ),
        ),
    ]
