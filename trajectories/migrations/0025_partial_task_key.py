"""The trajectory's task id is indexed with its bank where a run has one,
like the group and the token (migration 0024): most runs of an agent that
sends none hold "" there, and a full index of that one value grew after a
retention purge. No query reads the task id alone (the text search reads it
from the search vector); the old index and its LIKE twin are dropped.

Built with CREATE INDEX CONCURRENTLY (atomic = False) before the drop."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('trajectories', '0024_purge_partial_keys'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='trajectory',
            index=models.Index(condition=models.Q(('task_id', ''), _negated=True), fields=['bank', 'task_id'], name='trajectory_task'),
        ),
        migrations.AlterField(
            model_name='trajectory',
            name='task_id',
            field=models.CharField(blank=True, max_length=200),
        ),
    ]
