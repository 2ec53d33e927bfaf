"""Partial indexes for the trajectory keys that most rows may not have: the
token, the experience and the MaTTS group (with its bank, the way every
lookup reads it). A full index of a key that one value (NULL, or "") holds
for most rows grew after each retention purge at a million trajectories:
the purge's new row versions all land at the end of that one value's run of
entries. A partial index holds no entry for those rows, so a purge adds none.

The new indexes are built first, with CREATE INDEX CONCURRENTLY (atomic =
False: no lock that blocks writes while they build), then the old ones are
dropped (a DROP INDEX is quick)."""

import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("accounts", "0014_audit_action_vocabulary"),
        ("memories", "0039_dashbeat_merge"),
        ("trajectories", "0023_search3_merge"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="trajectory",
            index=models.Index(condition=models.Q(("token__isnull", False)), fields=["token"], name="trajectory_token"),
        ),
        AddIndexConcurrently(
            model_name="trajectory",
            index=models.Index(
                condition=models.Q(("experience__isnull", False)), fields=["experience"], name="trajectory_experience"
            ),
        ),
        AddIndexConcurrently(
            model_name="trajectory",
            index=models.Index(
                condition=models.Q(("group_id", ""), _negated=True),
                fields=["bank", "group_id"],
                name="trajectory_group",
            ),
        ),
        migrations.AlterField(
            model_name="trajectory",
            name="experience",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="trajectories",
                to="memories.experience",
            ),
        ),
        migrations.AlterField(
            model_name="trajectory",
            name="group_id",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AlterField(
            model_name="trajectory",
            name="token",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="trajectories",
                to="accounts.apitoken",
            ),
        ),
    ]
