# The agent's own report becomes the lowest tier: verified (the trusted agent signal) 3 → agent 1,
# judge 1 → 2, human 2 → 3. One UPDATE, so no row is moved twice.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("trajectories", "0014_verdict_tier"),
    ]

    operations = [
        migrations.RunSQL(
            "UPDATE trajectories_trajectory SET verdict_tier = CASE verdict_tier WHEN 3 THEN 1 WHEN 1 THEN 2"
            " WHEN 2 THEN 3 ELSE verdict_tier END WHERE verdict_tier IN (1, 2, 3)",
            "UPDATE trajectories_trajectory SET verdict_tier = CASE verdict_tier WHEN 1 THEN 3 WHEN 2 THEN 1"
            " WHEN 3 THEN 2 ELSE verdict_tier END WHERE verdict_tier IN (1, 2, 3)",
        ),
        migrations.AlterField(
            model_name="trajectory",
            name="verdict_tier",
            field=models.PositiveSmallIntegerField(
                choices=[(0, "No verdict"), (1, "The agent's own report"), (2, "LLM judge"), (3, "Human reviewer")],
                default=0,
            ),
        ),
    ]
