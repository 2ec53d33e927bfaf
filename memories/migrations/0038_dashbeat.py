"""A partial index of the items a distill prompt proposed and that were not superseded, by (bank, prompt
version, status), with the id: the dashboard's distill outcomes count them from the index alone, where they
read every bank's items before (a sequential scan: ~60 ms at 120k items, for none proposed by distill).

Built with CREATE INDEX CONCURRENTLY (non-atomic): memory items are a big table, and this takes no lock that
stops writes while it builds."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memories", "0037_dash2_merge")]

    operations = [
        AddIndexConcurrently(
            model_name="memoryitem",
            index=models.Index(
                condition=~models.Q(prompt_version="") & ~models.Q(status="superseded"),
                fields=["bank", "prompt_version", "status"],
                include=("id",),
                name="memoryitem_bank_distilled",
            ),
        ),
    ]
