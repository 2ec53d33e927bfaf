"""The bank's trajectory counts, maintained instead of recounted
(reasoningbank_site.delta_counts): signed delta rows of (bank, UTC day of
arrival, status, verdict) written by PostgreSQL triggers on every trajectory
write that moves a row's key, merged by a beat task (counts_compact), summed on
read. The dashboard's counts per status and its success-rate chart read them,
never the bank's every trajectory.

The triggers are declared in Trajectory's Meta, so ingest, the pipeline's bulk
updates, relabels, deletions, a bank's deletion and any later write path are
counted with no code on the path; a write that leaves the key as it was (the
status detail, a retry counter) adds nothing."""

from __future__ import annotations

from memories.items.counts import ITEM_COUNTS
from reasoningbank_site.delta_counts import DeltaCounts

TRAJECTORY_COUNTS = DeltaCounts(
    table="trajectories_trajectorycount",
    counted="trajectories_trajectory",
    name="trajectory_counts",
    key=(
        ("bank_id", "{row}.bank_id"),
        ("day", "(({row}.created_at AT TIME ZONE 'UTC')::date)"),
        ("status", "{row}.status"),
        ("verdict", "{row}.verdict"),
    ),
    updated=("status", "verdict", "bank_id", "created_at"),
)

# Fills the table from the trajectories as they are (the migration that adds the trigger).
FILL_SQL = TRAJECTORY_COUNTS.fill_sql


def counts_compact() -> int:
    """Merge the delta rows of the dashboard's maintained counts (the trajectories' and the items') into one
    row per key and drop keys that sum to zero; return the rows left. Runs from beat."""
    return TRAJECTORY_COUNTS.compact() + ITEM_COUNTS.compact()
