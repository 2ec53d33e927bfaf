"""Retrieval hot-path support, in SQL so the model state stays as declared:

- fillfactor 85 on memory items: serving bumps served_count/last_served_at;
  with free room on the page that update is HOT and does not insert a new
  tuple into the HNSW index (a full page forces one per served item).
- an index to count a bank's approved items lacking a current embedding
  (another model, or none) without scanning the bank.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0001_initial")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories_memoryitem SET (fillfactor = 85)",
            "ALTER TABLE memories_memoryitem RESET (fillfactor)",
        ),
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS memoryitem_bank_status_model ON memories_memoryitem (bank_id, status, embedding_model)",
            "DROP INDEX IF EXISTS memoryitem_bank_status_model",
        ),
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS memoryitem_bank_status_unembedded ON memories_memoryitem (bank_id, status) "
            "WHERE embedding_hash = ''",
            "DROP INDEX IF EXISTS memoryitem_bank_status_unembedded",
        ),
    ]
