"""Text search reads a stored tsvector column (not declared on the model, so no
ORM query reads it) instead of an expression index: the same text and GIN
index name, and checking an item outside the index reads the stored vector
rather than parsing its text again (see docs/architecture.md, full-text search). And
an index on (bank, updated_at): the item list's order, so a page is an index walk."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0012_version_actor_token'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='memoryitem',
            name='memoryitem_search_gin',
        ),
        migrations.AddIndex(
            model_name='memoryitem',
            index=models.Index(fields=['bank', 'updated_at'], name='memoryitem_bank_updated'),
        ),
        migrations.RunSQL(
            sql=[
                "ALTER TABLE memories_memoryitem ADD COLUMN search_vector tsvector GENERATED ALWAYS AS "
                "(to_tsvector('simple'::regconfig, COALESCE(title, '')::text || ' ' || COALESCE(description, '') || ' ' || COALESCE(content, ''))) STORED",
                "CREATE INDEX memoryitem_search_gin ON memories_memoryitem USING gin (search_vector)",
            ],
            reverse_sql=[
                "DROP INDEX memoryitem_search_gin",
                "ALTER TABLE memories_memoryitem DROP COLUMN search_vector",
            ],
        ),
    ]
