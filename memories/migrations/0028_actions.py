"""The actions each item recommends (memories.trust.actions), and their backfill: every existing item's
actions are recorded, so the bank's approved items make their actions known from the start. No finding
is made for existing items (what a bank approved before is its baseline)."""

import django.db.models.deletion
from django.db import migrations, models

from memories.trust.actions.extract import item_actions

BATCH = 500


def backfill(apps, schema_editor):
    MemoryItem = apps.get_model("memories", "MemoryItem")
    ItemAction = apps.get_model("memories", "ItemAction")
    items = MemoryItem.objects.only("id", "bank_id", "title", "description", "content").order_by("id")
    rows = []
    for item in items.iterator(chunk_size=BATCH):
        for a in item_actions(title=item.title, description=item.description, content=item.content):
            rows.append(
                ItemAction(
                    bank_id=item.bank_id, item_id=item.id, kind=a.kind, value=a.value, excerpt=a.excerpt,
                    risks=",".join(a.risks),
                )
            )
        if len(rows) >= BATCH:
            ItemAction.objects.bulk_create(rows)
            rows = []
    ItemAction.objects.bulk_create(rows)


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0014_audit_action_vocabulary'),
        ('memories', '0027_guidelines_read'),
    ]

    operations = [
        migrations.CreateModel(
            name='ItemAction',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(max_length=16)),
                ('value', models.CharField(max_length=500)),
                ('excerpt', models.TextField()),
                ('risks', models.CharField(blank=True, max_length=200)),
                ('bank', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.bank')),
                ('item', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='recommended_actions', to='memories.memoryitem')),
            ],
            options={
                'ordering': ['id'],
                'indexes': [models.Index(fields=['bank', 'kind', 'value'], name='itemaction_bank_kind_value')],
                'constraints': [models.UniqueConstraint(fields=('item', 'kind', 'value'), name='itemaction_once_per_item')],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
