"""The record of what was served to whom: each retrieval, and the per-day tallies the Impact report sums."""

from django.db import models

from accounts.models import ApiToken, Bank
from reasoningbank_site.ids import uuid7
from reasoningbank_site.text import counted


class Arm(models.TextChoices):
    TREATMENT = "treatment", "Served memories"
    HOLDOUT = "holdout", "Holdout (memories withheld)"


class RetrievalEvent(models.Model):
    """One retrieve call. `results` lists what was served (or, in the holdout
    arm, what would have been) as [{"id": "<uuid>", "score": 0.81}, ...]."""

    # Time-ordered (UUID v7): ingest can tell a retrieval just answered, whose log may still be landing
    # (the log is written after the answer: memories.serving.retrieval), from one that never was.
    public_id = models.UUIDField(default=uuid7, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="retrievals")
    # A later retrieval of a step-level run: the run's first retrieval, which decided the arm and alone carries
    # the run's outcome and tallies (so Impact counts a run once). Null for a first or single retrieval.
    run = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="later_steps")
    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="retrievals")
    query = models.TextField()
    task_id = models.CharField(max_length=200, blank=True)
    mode = models.CharField(max_length=16)
    k = models.PositiveSmallIntegerField()
    arm = models.CharField(max_length=16, choices=Arm.choices, default=Arm.TREATMENT)
    results = models.JSONField(default=list)
    # The bank's holdout fraction when this retrieval was assigned (null: before it was recorded);
    # the Impact page never compares retrievals assigned under different fractions.
    holdout_fraction = models.FloatField(null=True, blank=True)
    # The filters the agent sent, normalized ({} when none): {"tags": {"any"|"all": [...]}, "agent": {"in": [...]}, "metadata": {...}}.
    filters = models.JSONField(default=dict, blank=True)
    # Per-item randomisation (treatment arm): the bank's item holdout fraction when this retrieval was
    # made (null: before it was recorded) and the ids of `results` left out on their own.
    item_holdout_fraction = models.FloatField(null=True, blank=True)
    withheld = models.JSONField(default=list, blank=True)
    # The outcome of this retrieval so far, kept by memories.serving.tallies.retrieval_outcome_change: linked
    # trajectories, judged ones, successes, and the judged ones' step count.
    linked = models.PositiveIntegerField(default=0)
    judged = models.PositiveIntegerField(default=0)
    successes = models.PositiveIntegerField(default=0)
    steps = models.PositiveBigIntegerField(default=0)
    # Of the judged ones, those whose agent reported token usage: how many, their successes and their tokens.
    usage_runs = models.PositiveIntegerField(default=0)
    usage_successes = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    latency_ms = models.FloatField(default=0)
    # The estimated tokens of the memory block served (reasoningbank_site.text.token_estimate); 0 when none.
    memory_tokens = models.PositiveIntegerField(default=0)
    # The number of the bank's release this retrieval served (holdout: would have served); null before
    # the bank had a release. A canary retrieval is in the treatment arm with the canary's number.
    release = models.PositiveIntegerField(null=True, blank=True)
    # Folded into the items' served counters (memory_items_count_served), off the request path.
    served_counted = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["bank", "created_at"]),
            models.Index(fields=["id"], condition=models.Q(served_counted=False), name="retrieval_to_count"),
        ]

    def __str__(self) -> str:
        return f"{self.arm} retrieval of {counted(len(self.results), 'item')}"


class ItemSide(models.TextChoices):
    """How a candidate item took part in a retrieval (a RetrievalTally's per-item row)."""

    SERVED = "served", "Served (no per-item randomisation)"
    SERVED_RANDOMISED = "served_r", "Served, per-item randomisation on"
    WITHHELD_RANDOMISED = "withheld_r", "Left out on its own (per-item randomisation)"
    HOLDOUT = "holdout", "Withheld with everything (holdout arm)"


class RetrievalTally(models.Model):
    """Signed contributions to the Impact report's sums, per bank, UTC day of
    the retrieval, holdout fraction, arm, and (per-item rows) item and side.
    Appended on the write paths (a retrieval, a linked trajectory, a verdict
    change: never an update, so writers never wait on each other) and merged
    per key by ``retrieval_tallies_compact`` (beat). The report sums every row
    of a key, merged or not, so it is exact at any time and reads
    O(days × items) rows, not the trajectories. Days older than
    ROLLUP_AFTER_DAYS are rolled up by month (memories.serving.rollups):
    one ``monthly`` row per key, its ``day`` the month's last day."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    holdout_fraction = models.FloatField(null=True, blank=True)
    arm = models.CharField(max_length=16, choices=Arm.choices)
    item = models.UUIDField(null=True, blank=True)  # null: the arm's row
    side = models.CharField(max_length=16, choices=ItemSide.choices, blank=True)
    retrievals = models.IntegerField(default=0)
    triggered = models.IntegerField(default=0)  # retrievals that served, or would have served, an item
    units = models.IntegerField(default=0)  # triggered retrievals with a judged trajectory
    y_sum = models.FloatField(default=0)  # Σ per-retrieval success share over the units
    y_sq_sum = models.FloatField(default=0)
    trajectories = models.IntegerField(default=0)  # linked to triggered retrievals
    judged = models.IntegerField(default=0)
    successes = models.IntegerField(default=0)
    steps = models.BigIntegerField(default=0)  # step count of the judged ones
    # Of the judged ones, those that reported token usage: how many, their successes, their tokens.
    usage_runs = models.IntegerField(default=0)
    usage_successes = models.IntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    # The memory blocks served (every retrieval, later steps of a run included; holdout: 0 tokens) and their tokens.
    memory_blocks = models.IntegerField(default=0)
    memory_tokens = models.BigIntegerField(default=0)
    compacted = models.BooleanField(default=False)
    # A month's rows rolled up into one (``day`` is then the month's last day): see memories.serving.rollups.
    monthly = models.BooleanField(default=False)

    class Meta:
        indexes = [
            models.Index(fields=["bank", "day"], name="tally_bank_day"),
            # The arm rows alone (a few per day): the period's look-ups and the arms' sums.
            models.Index(fields=["bank", "day"], condition=models.Q(item__isnull=True), name="tally_bank_day_arms"),
            models.Index(fields=["id"], condition=models.Q(compacted=False), name="tally_to_compact"),
            # The items' sums (most of the table) read from the index alone: their bank's window, no heap.
            models.Index(
                fields=["bank", "day"],
                include=["holdout_fraction", "item", "side", "units", "y_sum", "judged", "successes"],
                condition=models.Q(item__isnull=False),
                name="tally_bank_day_items",
            ),
            # The daily rows old enough to roll up (memories.serving.rollups).
            models.Index(fields=["day"], condition=models.Q(monthly=False), name="tally_daily"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.arm} {self.item or ''} {self.side}"


class RetrievalItemTotal(models.Model):
    """Per bank, holdout fraction, item and side: the sums of every compacted
    per-item RetrievalTally row of every day, kept by the writers that make
    rows compacted (``retrieval_tallies_compact``, the monthly roll-up, the
    rebuild) in the same transaction. So a bank's all-time per-item sums are
    these rows plus its appended rows not yet compacted: items × sides rows,
    not days × items (trajectories.impact.tallies.item_side_sums)."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+", db_index=False)
    holdout_fraction = models.FloatField(null=True, blank=True)
    item = models.UUIDField()
    side = models.CharField(max_length=16, choices=ItemSide.choices)
    units = models.BigIntegerField(default=0)
    y_sum = models.FloatField(default=0)
    judged = models.BigIntegerField(default=0)
    successes = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["bank", "holdout_fraction", "item", "side"],
                nulls_distinct=False,
                name="item_total_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.item} {self.side}"
