"""The bank's maintained trajectory counts (trajectories.dashboard.counts): the table of signed delta rows,
the trigger on trajectories that writes them, and the rows for the trajectories already there.

Locks: creating the trigger takes a SHARE ROW EXCLUSIVE lock on trajectories_trajectory, held until the
migration commits, so ingest and the pipeline's writes wait while the fill reads the table once (a grouped
sequential scan: seconds at a million rows; reads are not blocked). The new table's index is built while
it is empty."""

import django.db.models.deletion
import pgtrigger.compiler
import pgtrigger.migrations
from django.db import migrations, models

from trajectories.dashboard.counts import FILL_SQL


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0014_audit_action_vocabulary"),
        ("trajectories", "0019_dash"),
    ]

    operations = [
        migrations.CreateModel(
            name="TrajectoryCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("status", models.CharField(max_length=20)),
                ("verdict", models.CharField(blank=True, max_length=16)),
                ("n", models.IntegerField()),
            ],
        ),
        migrations.AddField(
            model_name="trajectorycount",
            name="bank",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="accounts.bank",
            ),
        ),
        migrations.AddIndex(
            model_name="trajectorycount",
            index=models.Index(fields=["bank", "day"], name="trajectorycount_bank_day"),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name="trajectory",
            trigger=pgtrigger.compiler.Trigger(
                name="trajectory_counts",
                sql=pgtrigger.compiler.UpsertTriggerSql(
                    func="\nIF TG_OP = 'UPDATE' AND OLD.bank_id = NEW.bank_id AND OLD.status = NEW.status\n   AND OLD.verdict = NEW.verdict AND ((OLD.created_at AT TIME ZONE 'UTC')::date) = ((NEW.created_at AT TIME ZONE 'UTC')::date) THEN\n    RETURN NULL;\nEND IF;\nIF TG_OP IN ('UPDATE', 'DELETE') THEN\n    INSERT INTO trajectories_trajectorycount (bank_id, day, status, verdict, n) VALUES (OLD.bank_id, ((OLD.created_at AT TIME ZONE 'UTC')::date), OLD.status, OLD.verdict, -1);\nEND IF;\nIF TG_OP IN ('UPDATE', 'INSERT') THEN\n    INSERT INTO trajectories_trajectorycount (bank_id, day, status, verdict, n) VALUES (NEW.bank_id, ((NEW.created_at AT TIME ZONE 'UTC')::date), NEW.status, NEW.verdict, 1);\nEND IF;\nRETURN NULL;\n",
                    hash="88114837658aaf72d36faec60186363d56cecc02",
                    operation='INSERT OR DELETE OR UPDATE OF "status", "verdict", "bank_id", "created_at"',
                    pgid="pgtrigger_trajectory_counts_a4460",
                    table="trajectories_trajectory",
                    when="AFTER",
                ),
            ),
        ),
        # Every existing trajectory counted once, in the migration's transaction: creating the trigger took a
        # lock that holds writes to trajectories until the commit, so none is missed or counted twice.
        migrations.RunSQL(FILL_SQL, migrations.RunSQL.noop),
    ]
