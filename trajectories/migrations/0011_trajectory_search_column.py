"""Text search reads a stored tsvector column (not declared on the model, so no
ORM query reads it) instead of an expression index: the same text and GIN
index name, and checking a trajectory outside the index reads the stored vector
rather than parsing its text again (see docs/architecture.md, full-text search)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('trajectories', '0010_comments'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='trajectory',
            name='trajectory_search_gin',
        ),
        migrations.RunSQL(
            sql=[
                "ALTER TABLE trajectories_trajectory ADD COLUMN search_vector tsvector GENERATED ALWAYS AS "
                "(to_tsvector('simple'::regconfig, COALESCE(task, '') || ' ' || COALESCE(final_answer, '') || ' ' || COALESCE(task_id, '')::text)) STORED",
                "CREATE INDEX trajectory_search_gin ON trajectories_trajectory USING gin (search_vector)",
            ],
            reverse_sql=[
                "DROP INDEX trajectory_search_gin",
                "ALTER TABLE trajectories_trajectory DROP COLUMN search_vector",
            ],
        ),
    ]
