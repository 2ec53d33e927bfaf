"""A trajectory's raw record (steps, final answer) moves to a table of its own,
``trajectories_rawrecord``, and the retention purge becomes a DELETE there: a
purge never writes a new version of a trajectory row, so none of the
trajectory's indexes gains an entry (every purge UPDATE did, because the final
answer was in the stored search vector and the purged mark in an index's
predicate). A trajectory without a raw record was purged; which run purged it
is kept per bank in ``trajectories_retentionrun``.

The final answer's words move with it: the trajectory's search vector keeps the
task and task id, and the raw record gets ``answer_vector`` with its GIN index
(trajectory_search_vector joins the two). A trigger keeps the record's copy of
the trajectory's bank and creation time, which retention's index reads, equal
to the trajectory's.

On an existing database: every unpurged record is copied (about 2 minutes for
a million trajectories with 1.5 KB of steps each, under the migration's lock),
each purge already made becomes a retention run (its time, retention and
cutoff, from the purged rows' marks), and re-adding the trajectory's search
vector rewrites the trajectory table without the old columns' bytes; both tables
are analyzed at the end. Reversible:
the records are copied back and the purged marks set from the runs."""

import django.db.models.deletion
import pgtrigger.compiler
import pgtrigger.migrations
from django.db import migrations, models

COPY = """
INSERT INTO trajectories_rawrecord (trajectory_id, bank_id, created_at, steps, final_answer)
SELECT id, bank_id, created_at, steps, final_answer FROM trajectories_trajectory
WHERE steps_purged_at IS NULL ORDER BY bank_id, created_at, id
"""
RUNS = """
INSERT INTO trajectories_retentionrun (bank_id, ran_at, retention_days, created_before, purged, archive)
SELECT bank_id, steps_purged_at, COALESCE(steps_purged_days, 0),
       steps_purged_at - make_interval(days => COALESCE(steps_purged_days, 0)), count(*), ''
FROM trajectories_trajectory WHERE steps_purged_at IS NOT NULL
GROUP BY bank_id, steps_purged_at, steps_purged_days
"""
COPY_BACK = """
UPDATE trajectories_trajectory t SET steps = r.steps, final_answer = r.final_answer
FROM trajectories_rawrecord r WHERE r.trajectory_id = t.id
"""
MARKS_BACK = """
UPDATE trajectories_trajectory t SET steps_purged_at = COALESCE(p.ran_at, now()), steps_purged_days = p.retention_days
FROM (
    SELECT t2.id, run.ran_at, run.retention_days FROM trajectories_trajectory t2
    LEFT JOIN LATERAL (
        SELECT ran_at, retention_days FROM trajectories_retentionrun
        WHERE bank_id = t2.bank_id AND created_before > t2.created_at ORDER BY ran_at, id LIMIT 1
    ) run ON true
    WHERE NOT EXISTS (SELECT 1 FROM trajectories_rawrecord x WHERE x.trajectory_id = t2.id)
) p WHERE p.id = t.id
"""
OLD_VECTOR = (
    "to_tsvector('simple'::regconfig, COALESCE(task, '') || ' ' || COALESCE(final_answer, '') || ' ' "
    "|| COALESCE(task_id, '')::text)"
)
NEW_VECTOR = "to_tsvector('simple'::regconfig, COALESCE(task, '') || ' ' || COALESCE(task_id, '')::text)"


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0014_audit_action_vocabulary'),
        ('trajectories', '0025_partial_task_key'),
    ]

    operations = [
        migrations.CreateModel(
            name='RawRecord',
            fields=[
                ('trajectory', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='raw', serialize=False, to='trajectories.trajectory')),
                ('bank', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='accounts.bank')),
                ('created_at', models.DateTimeField()),
                ('steps', models.JSONField(default=list)),
                ('final_answer', models.TextField(blank=True)),
            ],
        ),
        migrations.CreateModel(
            name='RetentionRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('bank', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.bank')),
                ('ran_at', models.DateTimeField()),
                ('retention_days', models.PositiveIntegerField()),
                ('created_before', models.DateTimeField()),
                ('purged', models.PositiveIntegerField(default=0)),
                ('archive', models.CharField(blank=True, max_length=500)),
            ],
        ),
        migrations.RunSQL(sql=[COPY, RUNS], reverse_sql=[COPY_BACK, MARKS_BACK]),
        migrations.RunSQL(
            sql=[
                "ALTER TABLE trajectories_rawrecord ADD COLUMN answer_vector tsvector GENERATED ALWAYS AS "
                "(to_tsvector('simple'::regconfig, COALESCE(final_answer, ''))) STORED",
                "CREATE INDEX rawrecord_answer_gin ON trajectories_rawrecord USING gin (answer_vector)",
            ],
            reverse_sql=[
                "DROP INDEX rawrecord_answer_gin",
                "ALTER TABLE trajectories_rawrecord DROP COLUMN answer_vector",
            ],
        ),
        migrations.AddIndex(
            model_name='rawrecord',
            index=models.Index(fields=['bank', 'created_at', 'trajectory'], name='rawrecord_bank_created'),
        ),
        migrations.AddIndex(
            model_name='retentionrun',
            index=models.Index(fields=['bank', 'ran_at'], name='retentionrun_bank_ran'),
        ),
        migrations.RunSQL(
            sql=["ALTER TABLE trajectories_trajectory DROP COLUMN search_vector"],
            reverse_sql=[
                f"ALTER TABLE trajectories_trajectory ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({OLD_VECTOR}) STORED",
                "CREATE INDEX trajectory_search_gin ON trajectories_trajectory USING gin (search_vector)",
            ],
        ),
        migrations.RemoveIndex(
            model_name='trajectory',
            name='trajectory_purgeable',
        ),
        migrations.RemoveField(
            model_name='trajectory',
            name='final_answer',
        ),
        migrations.RemoveField(
            model_name='trajectory',
            name='steps',
        ),
        migrations.RemoveField(
            model_name='trajectory',
            name='steps_purged_at',
        ),
        migrations.RemoveField(
            model_name='trajectory',
            name='steps_purged_days',
        ),
        migrations.RunSQL(
            sql=[
                f"ALTER TABLE trajectories_trajectory ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({NEW_VECTOR}) STORED",
                "CREATE INDEX trajectory_search_gin ON trajectories_trajectory USING gin (search_vector)",
            ],
            reverse_sql=[
                "DROP INDEX trajectory_search_gin",
                "ALTER TABLE trajectories_trajectory DROP COLUMN search_vector",
            ],
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='trajectory',
            trigger=pgtrigger.compiler.Trigger(name='trajectory_raw_key', sql=pgtrigger.compiler.UpsertTriggerSql(condition='WHEN (OLD.bank_id IS DISTINCT FROM NEW.bank_id OR OLD.created_at IS DISTINCT FROM NEW.created_at)', func='UPDATE trajectories_rawrecord SET bank_id = NEW.bank_id, created_at = NEW.created_at WHERE trajectory_id = NEW.id; RETURN NULL;', hash='8547db126097b4e93b679b80703ca801a81da32f', operation='UPDATE OF "bank_id", "created_at"', pgid='pgtrigger_trajectory_raw_key_7e5cf', table='trajectories_trajectory', when='AFTER')),
        ),
        # The planner's statistics of the rewritten table and the new one (the text search's rarest word reads
        # them): without them, until autovacuum's first ANALYZE, a search is planned blind.
        migrations.RunSQL(
            sql=["ANALYZE trajectories_trajectory", "ANALYZE trajectories_rawrecord"],
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
