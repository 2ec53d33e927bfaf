"""The bank's maintained trajectory counts (trajectories.dashboard.counts): the table of signed delta rows,
the triggers on trajectories that write them, and the rows for the trajectories already there.

Locks: creating the triggers takes a SHARE ROW EXCLUSIVE lock on trajectories_trajectory, held until the
migration commits, so ingest and the pipeline's writes wait while the fill reads the table once (a grouped
sequential scan: 0.5 s at 220,000 rows; reads are not blocked). The new table's index is built while it is
empty."""

import django.db.models.deletion
import pgtrigger.compiler
import pgtrigger.migrations
from django.db import migrations, models

from trajectories.dashboard.counts import FILL_SQL


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0014_audit_action_vocabulary'),
        ('trajectories', '0019_dash'),
    ]

    operations = [
        migrations.CreateModel(
            name='TrajectoryCount',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('day', models.DateField()),
                ('status', models.CharField(max_length=20)),
                ('verdict', models.CharField(blank=True, max_length=16)),
                ('n', models.IntegerField()),
            ],
        ),
        migrations.AddField(
            model_name='trajectorycount',
            name='bank',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='accounts.bank'),
        ),
        migrations.AddIndex(
            model_name='trajectorycount',
            index=models.Index(fields=['bank', 'day'], name='trajectorycount_bank_day'),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='trajectory',
            trigger=pgtrigger.compiler.Trigger(name='trajectory_counts_insert', sql=pgtrigger.compiler.UpsertTriggerSql(func="\nINSERT INTO trajectories_trajectorycount (bank_id, day, status, verdict, n)\nSELECT r.bank_id, ((r.created_at AT TIME ZONE 'UTC')::date), r.status, r.verdict, COUNT(*) FROM new_rows r GROUP BY 1, 2, 3, 4;\nRETURN NULL;\n", hash='aaecd6a1c6f11ce5572d98bde0e4cc1041477c13', level='STATEMENT', operation='INSERT', pgid='pgtrigger_trajectory_counts_insert_99fa2', referencing='REFERENCING NEW TABLE AS new_rows ', table='trajectories_trajectory', when='AFTER')),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='trajectory',
            trigger=pgtrigger.compiler.Trigger(name='trajectory_counts_delete', sql=pgtrigger.compiler.UpsertTriggerSql(func="\nINSERT INTO trajectories_trajectorycount (bank_id, day, status, verdict, n)\nSELECT r.bank_id, ((r.created_at AT TIME ZONE 'UTC')::date), r.status, r.verdict, -COUNT(*) FROM old_rows r GROUP BY 1, 2, 3, 4;\nRETURN NULL;\n", hash='20e841e226af214d925a95457559dd6a2ff69c3e', level='STATEMENT', operation='DELETE', pgid='pgtrigger_trajectory_counts_delete_56c06', referencing='REFERENCING OLD TABLE AS old_rows ', table='trajectories_trajectory', when='AFTER')),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='trajectory',
            trigger=pgtrigger.compiler.Trigger(name='trajectory_counts_move', sql=pgtrigger.compiler.UpsertTriggerSql(condition="WHEN (OLD.bank_id IS DISTINCT FROM NEW.bank_id OR OLD.status IS DISTINCT FROM NEW.status OR OLD.verdict IS DISTINCT FROM NEW.verdict OR ((OLD.created_at AT TIME ZONE 'UTC')::date) IS DISTINCT FROM ((NEW.created_at AT TIME ZONE 'UTC')::date))", func="\nINSERT INTO trajectories_trajectorycount (bank_id, day, status, verdict, n) VALUES (OLD.bank_id, ((OLD.created_at AT TIME ZONE 'UTC')::date), OLD.status, OLD.verdict, -1), (NEW.bank_id, ((NEW.created_at AT TIME ZONE 'UTC')::date), NEW.status, NEW.verdict, 1);\nRETURN NULL;\n", hash='4cf81d6760cf8b604dc037196152bc898315f40b', operation='UPDATE OF "status", "verdict", "bank_id", "created_at"', pgid='pgtrigger_trajectory_counts_move_a16fe', table='trajectories_trajectory', when='AFTER')),
        ),
        # Every existing trajectory counted once, in the migration's transaction: creating the triggers took a
        # lock that holds writes to trajectories until the commit, so none is missed or counted twice.
        migrations.RunSQL(FILL_SQL, migrations.RunSQL.noop),
    ]
