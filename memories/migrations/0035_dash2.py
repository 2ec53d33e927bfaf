"""The item versions by time: the dashboard's recent activity reads the newest ones by index instead of sorting
every version of the bank's items.

Built with CREATE INDEX CONCURRENTLY (non-atomic): item versions grow with every review, and a plain CREATE INDEX
would block reviews and distillation while it builds; this takes no lock that stops writes."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memories", "0034_impact_merge")]

    operations = [
        AddIndexConcurrently(
            model_name="memoryitemversion",
            index=models.Index(fields=["created_at"], name="memoryitemversion_created"),
        ),
    ]
