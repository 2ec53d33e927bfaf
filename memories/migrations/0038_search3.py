"""A covering index of the item versions people made, by time: the reviewers page reads a period's decisions
from the index alone. Built CONCURRENTLY (atomic = False): a plain CREATE INDEX would block reviews while it
builds."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memories", "0037_dash2_merge")]

    operations = [
        AddIndexConcurrently(
            model_name="memoryitemversion",
            index=models.Index(
                condition=models.Q(("author__isnull", False)),
                fields=["created_at"],
                include=["item", "author", "action", "number"],
                name="itemversion_authored_created",
            ),
        ),
    ]
