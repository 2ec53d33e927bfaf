"""The partial index of approved items flagged for another look: the dashboard's backlog counted them with it,
and now reads the maintained item counts (memories.items.counts); no query reads it, and every item write paid
for it."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0041_item_counts'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='memoryitem',
            name='memoryitem_bank_flagged',
        ),
    ]
