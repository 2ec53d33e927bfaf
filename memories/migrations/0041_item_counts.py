"""The bank's maintained item counts (memories.items.counts): the table of signed delta rows, the triggers on
items that write them, and the rows for the items already there.

Locks: creating the triggers takes a SHARE ROW EXCLUSIVE lock on memories_memoryitem, held until the migration
commits, so item writes wait while the fill reads the table once (a grouped scan: about 0.1 s per 100,000
items; reads and retrieval are not blocked). The new table's index is built while it is empty."""

import django.db.models.deletion
import pgtrigger.compiler
import pgtrigger.migrations
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0014_audit_action_vocabulary'),
        ('memories', '0040_impactsums'),
    ]

    operations = [
        migrations.CreateModel(
            name='MemoryItemCount',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(max_length=16)),
                ('flagged', models.BooleanField()),
                ('n', models.IntegerField()),
            ],
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='memoryitem',
            trigger=pgtrigger.compiler.Trigger(name='item_counts_insert', sql=pgtrigger.compiler.UpsertTriggerSql(func="\nINSERT INTO memories_memoryitemcount (bank_id, status, flagged, n)\nSELECT r.bank_id, r.status, (r.needs_review_reason <> ''), COUNT(*) FROM new_rows r GROUP BY 1, 2, 3;\nRETURN NULL;\n", hash='c907e4638f0a870a69471d326ecce792eb318a3c', level='STATEMENT', operation='INSERT', pgid='pgtrigger_item_counts_insert_4af1d', referencing='REFERENCING NEW TABLE AS new_rows ', table='memories_memoryitem', when='AFTER')),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='memoryitem',
            trigger=pgtrigger.compiler.Trigger(name='item_counts_delete', sql=pgtrigger.compiler.UpsertTriggerSql(func="\nINSERT INTO memories_memoryitemcount (bank_id, status, flagged, n)\nSELECT r.bank_id, r.status, (r.needs_review_reason <> ''), -COUNT(*) FROM old_rows r GROUP BY 1, 2, 3;\nRETURN NULL;\n", hash='11ff0184ee8f7918b306aba7c73d681f85319823', level='STATEMENT', operation='DELETE', pgid='pgtrigger_item_counts_delete_c6c96', referencing='REFERENCING OLD TABLE AS old_rows ', table='memories_memoryitem', when='AFTER')),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='memoryitem',
            trigger=pgtrigger.compiler.Trigger(name='item_counts_move', sql=pgtrigger.compiler.UpsertTriggerSql(condition="WHEN (OLD.bank_id IS DISTINCT FROM NEW.bank_id OR OLD.status IS DISTINCT FROM NEW.status OR (OLD.needs_review_reason <> '') IS DISTINCT FROM (NEW.needs_review_reason <> ''))", func="\nINSERT INTO memories_memoryitemcount (bank_id, status, flagged, n) VALUES (OLD.bank_id, OLD.status, (OLD.needs_review_reason <> ''), -1), (NEW.bank_id, NEW.status, (NEW.needs_review_reason <> ''), 1);\nRETURN NULL;\n", hash='7721899408de3271cf9ffc4e9c1b513a00a5083b', operation='UPDATE OF "status", "needs_review_reason", "bank_id"', pgid='pgtrigger_item_counts_move_49292', table='memories_memoryitem', when='AFTER')),
        ),
        migrations.AddField(
            model_name='memoryitemcount',
            name='bank',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='accounts.bank'),
        ),
        migrations.AddIndex(
            model_name='memoryitemcount',
            index=models.Index(fields=['bank', 'status'], name='memoryitemcount_bank_status'),
        ),
        # Every existing item counted once, in the migration's transaction: creating the triggers took a lock
        # that holds writes to items until the commit, so none is missed or counted twice.
        migrations.RunSQL(
            """
            INSERT INTO memories_memoryitemcount (bank_id, status, flagged, n)
            SELECT bank_id, status, (needs_review_reason <> ''), COUNT(*) FROM memories_memoryitem GROUP BY 1, 2, 3
            """,
            migrations.RunSQL.noop,
        ),
    ]
