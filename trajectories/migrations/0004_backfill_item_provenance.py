# Backfill: memory items distilled before retrieval filters existed get the
# agent and metadata of the trajectories of their experience. It lives in the
# trajectories app because it reads trajectories (trajectories → memories).

from django.db import migrations

SOURCE_METADATA_MAX = 50  # as memories.items.models.SOURCE_METADATA_MAX when written


def backfill_item_provenance(apps, schema_editor):
    Trajectory = apps.get_model("trajectories", "Trajectory")
    MemoryItem = apps.get_model("memories", "MemoryItem")
    experiences_with_items = MemoryItem.objects.filter(experience__isnull=False).values("experience_id")
    rows = (
        Trajectory.objects.filter(experience_id__in=experiences_with_items)
        .order_by("experience_id", "created_at", "pk")
        .values_list("experience_id", "agent", "metadata")
    )

    def flush(experience_id, agents, metadata):
        MemoryItem.objects.filter(experience_id=experience_id, source_agents=[], source_metadata=[]).update(
            source_agents=sorted(agents), source_metadata=metadata[:SOURCE_METADATA_MAX]
        )

    current, agents, metadata = None, set(), []
    for experience_id, agent, meta in rows.iterator(chunk_size=2000):
        if experience_id != current:
            if current is not None:
                flush(current, agents, metadata)
            current, agents, metadata = experience_id, set(), []
        if agent:
            agents.add(agent)
        if isinstance(meta, dict) and meta and meta not in metadata:
            metadata.append(meta)
    if current is not None:
        flush(current, agents, metadata)


class Migration(migrations.Migration):
    dependencies = [
        ("trajectories", "0003_otlp_trace_spans"),
        ("memories", "0005_item_tags_and_provenance"),
    ]

    operations = [
        migrations.RunPython(backfill_item_provenance, migrations.RunPython.noop),
    ]
