"""The (bank, created_at) index also carries ``agent``: the review queue's and the trajectory list's agent dropdown
(the agents of a bank's latest 5,000 trajectories) is then an Index Only Scan instead of 5,000 heap rows read.
The new index is built before the old one is dropped: lists by date never lose their index."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0008_bank_duplicate_threshold'),
        ('memories', '0013_item_search_column'),
        ('trajectories', '0011_trajectory_search_column'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='trajectory',
            index=models.Index(fields=['bank', 'created_at'], include=('agent',), name='trajectory_bank_created_agent'),
        ),
        migrations.RemoveIndex(
            model_name='trajectory',
            name='trajectorie_bank_id_7b4cdc_idx',
        ),
    ]
