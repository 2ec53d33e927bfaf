"""The dashboard's maintained counts (trajectories.dashboard.counts)."""

from django.db import models

from accounts.models import Bank


class TrajectoryCount(models.Model):
    """A signed number of a bank's trajectories that arrived on ``day`` (UTC)
    with this status and verdict. Written by the trigger on trajectories
    (+1 for a row's new key, -1 for its old one), merged per key by
    counts_compact; a key's count is the sum of its rows."""

    # No database constraint: the trigger writes the -1 rows of a bank's trajectories while the bank is being
    # deleted; those sum to zero with the bank's +1 rows and compaction drops them.
    # Its index is the (bank, day) one below.
    bank = models.ForeignKey(Bank, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="+")
    day = models.DateField()
    status = models.CharField(max_length=20)
    verdict = models.CharField(max_length=16, blank=True)
    n = models.IntegerField()

    class Meta:
        indexes = [models.Index(fields=["bank", "day"], name="trajectorycount_bank_day")]

    def __str__(self) -> str:
        return f"{self.day} {self.status} {self.verdict or '-'}: {self.n:+d}"
