# The agent's own report becomes the lowest tier (agent 1 < judge 2 < human 3; it was "verified", 3, the top).
# A policy's serving tier keeps its meaning: judge 1 → 2, human 2 → 3; one that served only the agent's own
# word ("verified", 3) now asks for the strictest tier left, a human's (3).

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0024_review_policy_dealt"),
    ]

    operations = [
        migrations.RunSQL(
            "UPDATE memories_trustpolicy SET min_tier = CASE min_tier WHEN 1 THEN 2 WHEN 2 THEN 3 ELSE min_tier END"
            " WHERE min_tier IN (1, 2)",
            "UPDATE memories_trustpolicy SET min_tier = CASE min_tier WHEN 2 THEN 1 WHEN 3 THEN 2 ELSE min_tier END"
            " WHERE min_tier IN (2, 3)",
        ),
        migrations.AlterField(
            model_name="trustpolicy",
            name="min_tier",
            field=models.PositiveSmallIntegerField(
                choices=[(0, "No verdict"), (1, "The agent's own report"), (2, "LLM judge"), (3, "Human reviewer")],
                default=0,
                validators=[django.core.validators.MinValueValidator(0), django.core.validators.MaxValueValidator(3)],
            ),
        ),
    ]
