"""A trajectory's raw record and the retention runs that purge it; reviewers'
comments on memory items and trajectories."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Bank
from memories.items.models import MemoryItem
from trajectories.models import Trajectory


class RawRecord(models.Model):
    """A trajectory's raw record: its steps and final answer, the part that can
    hold personal data. One per trajectory from its INSERT until the bank's
    retention purges it (trajectories.records.retention); a saved trajectory
    without one was purged. In a table of its own so that the purge is a
    DELETE here: it never writes a new version of the trajectory row, so none
    of the trajectory's indexes gains an entry. Read and set through
    ``Trajectory.steps`` and ``Trajectory.final_answer``.

    The final answer's words are searched from this table: a stored generated
    ``answer_vector`` with its GIN index ``rawrecord_answer_gin`` (migration
    0026; trajectories.models.trajectory_search_vector)."""

    trajectory = models.OneToOneField(Trajectory, primary_key=True, on_delete=models.CASCADE, related_name="raw")
    # Copies of the trajectory's bank and creation time: retention reads its batches from this table's own
    # index (the records it may still purge are the rows still here). The trajectory's deletion deletes it.
    bank = models.ForeignKey(Bank, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    created_at = models.DateTimeField()
    steps = models.JSONField(default=list)
    final_answer = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["bank", "created_at", "trajectory"], name="rawrecord_bank_created")]

    def __str__(self) -> str:
        return f"raw record of trajectory {self.trajectory_id}"


class RetentionRun(models.Model):
    """One retention run's purge of one bank's raw records: when, under which
    retention, its cutoff, how many it purged and where it archived them. A
    purged trajectory was purged by the first run of its bank whose cutoff
    came after the trajectory was created (``Trajectory.steps_purge``)."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    ran_at = models.DateTimeField()
    retention_days = models.PositiveIntegerField()
    created_before = models.DateTimeField()
    purged = models.PositiveIntegerField(default=0)
    archive = models.CharField(max_length=500, blank=True)

    class Meta:
        indexes = [models.Index(fields=["bank", "ran_at"], name="retentionrun_bank_ran")]

    def __str__(self) -> str:
        return f"retention of bank {self.bank_id} at {self.ran_at:%Y-%m-%d %H:%M}: {self.purged} purged"


# The longest comment a reviewer may write (characters).
COMMENT_MAX = 2000


class Comment(models.Model):
    """A reviewer's note on a memory item or on a trajectory (exactly one of
    the two). It lives here, in the app that sees both, and goes with its
    item or trajectory when that is deleted."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(MemoryItem, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    trajectory = models.ForeignKey(Trajectory, null=True, blank=True, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField(max_length=COMMENT_MAX)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["item", "created_at"]),
            models.Index(fields=["trajectory", "created_at"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(item__isnull=False, trajectory__isnull=True)
                | Q(item__isnull=True, trajectory__isnull=False),
                name="comment_on_item_or_trajectory",
            ),
        ]

    def __str__(self) -> str:
        return f"comment by {self.author_id} on {'item' if self.item_id else 'trajectory'}"
