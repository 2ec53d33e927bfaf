# Releases remember when they were first served (production or canary). Before the evaluation gate every
# release was labelled the moment it was written (automatic, published, canaried or imported), so every
# existing release was served from its creation on.
from django.db import migrations, models
from django.db.models import F


def backfill(apps, schema_editor):
    Release = apps.get_model("memories", "Release")
    Release.objects.filter(first_served_at__isnull=True).update(first_served_at=F("created_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0030_evaluation_contract"),
    ]

    operations = [
        migrations.AddField(
            model_name="release",
            name="first_served_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
