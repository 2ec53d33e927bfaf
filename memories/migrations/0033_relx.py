"""Releases say whether they were written from the whole draft, and items get
a partial index on their validity: the releases page's draft diff reads only
the items changed since the newest whole-draft release.

The backfill marks as whole every release published by hand or imported, and
every bank's first release (each is written from the whole draft); an
automatic release after the first may hold only the items one change touched,
so it stays unmarked (the diff then anchors on an earlier release: more items
read, never a wrong diff). The index is built with a plain CREATE INDEX, which
blocks writes to memory items while it builds (items are tens of thousands per
bank, not millions: a second or two)."""

from django.db import migrations, models
from django.db.models import Q


def mark_whole(apps, schema_editor):
    Release = apps.get_model("memories", "Release")
    Release.objects.filter(Q(source__in=["published", "imported"]) | Q(number=1)).update(whole_draft=True)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0032_evaluation_merge"),
    ]

    operations = [
        migrations.AddField(
            model_name="release",
            name="whole_draft",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RunPython(mark_whole, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="memoryitem",
            index=models.Index(
                condition=models.Q(("valid_until__isnull", False)),
                fields=["bank", "valid_until"],
                name="memoryitem_bank_valid_until",
            ),
        ),
    ]
