"""Two indexes for the dashboard: the item versions by time (the recent activity reads the newest ones instead
of sorting every version of the bank's items), and the approved items flagged for another look (partial: a few;
the review backlog counts them without reading every approved item).

Built with CREATE INDEX CONCURRENTLY (non-atomic): item versions grow with every review, and a plain CREATE INDEX
and items would block reviews and distillation while they build; this takes no lock that stops writes."""

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
        AddIndexConcurrently(
            model_name="memoryitem",
            index=models.Index(
                condition=models.Q(status="approved") & ~models.Q(needs_review_reason=""),
                fields=["bank"],
                name="memoryitem_bank_flagged",
            ),
        ),
    ]
