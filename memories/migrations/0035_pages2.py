"""Two indexes for the item exports' keyset chunks: (bank, created_at, id) for the full copy, oldest first,
and (bank, approved_at, id) for the served export, oldest approval first. Each chunk is then an index range
read of its rows, where it was a sort of the whole bank before the first row.

Built with CREATE INDEX CONCURRENTLY (non-atomic): memory items are a big table, and this takes no lock that
stops writes while it builds."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memories", "0034_impact_merge")]

    operations = [
        AddIndexConcurrently(
            model_name="memoryitem",
            index=models.Index(fields=["bank", "created_at", "id"], name="memoryitem_bank_created_id"),
        ),
        AddIndexConcurrently(
            model_name="memoryitem",
            index=models.Index(fields=["bank", "approved_at", "id"], name="memoryitem_bank_approved_id"),
        ),
    ]
