"""A bank's review policy: the reviewers' guidelines (markdown, shown beside
the queue and the focus view) and how many independent decisions an item
needs. One row per bank, created on first use; absent means the defaults."""

import uuid

from django.conf import settings
from django.db import models

from accounts.models import Bank

GUIDELINES_MAX = 20_000


class Distribution(models.TextChoices):
    """Who gives an item's several decisions (with ``decisions_required`` > 1)."""

    OPEN = "open", "Open: any reviewer, first come"
    ROUND_ROBIN = "round_robin", "Round-robin: each item dealt to reviewers in turn"
    CLAIM = "claim", "Claimed: reviewers claim items, up to the decisions needed"


class ReviewPolicy(models.Model):
    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, related_name="review_policy")
    guidelines = models.TextField(blank=True, help_text="Markdown, shown to reviewers beside the queue.")
    decisions_required = models.PositiveSmallIntegerField(
        default=1, help_text="Independent reviewer decisions each item needs (1: the first decision stands)."
    )
    distribution = models.CharField(
        max_length=12,
        choices=Distribution.choices,
        default=Distribution.OPEN,
        help_text="Who gives an item's decisions when it needs several.",
    )
    deal_cursor = models.PositiveIntegerField(default=0, editable=False)  # the next reviewer in the round-robin
    # When the whole backlog was last dealt, and to whom: later looks deal only the items changed since.
    dealt_at = models.DateTimeField(null=True, blank=True, editable=False)
    dealt_voters = models.JSONField(default=list, blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"review policy of bank {self.bank_id}"

    @property
    def seated(self) -> bool:
        """Whether only an item's seat holders (dealt or claimed) may decide on it."""
        return self.decisions_required > 1 and self.distribution != Distribution.OPEN


class VoteDecision(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"


class ReviewVote(models.Model):
    """One reviewer's independent decision on a proposed item, under a policy needing several.
    Hidden from the other reviewers until the item has all the decisions it needs."""

    item = models.ForeignKey("memories.MemoryItem", on_delete=models.CASCADE, related_name="review_votes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    decision = models.CharField(max_length=8, choices=VoteDecision.choices)
    reason = models.CharField(max_length=2000, blank=True)
    # An approve vote's risk confirmation: the ids of the risk findings its reviewer read and confirmed
    # (memories.review.votes); a finding added since is not covered, and the vote must confirm again.
    confirmed_findings = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "user"], name="reviewvote_unique_item_user")]
        indexes = [models.Index(fields=["item", "created_at"])]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.decision} on {self.item_id}"


class SeatSource(models.TextChoices):
    DEALT = "dealt", "Dealt"
    CLAIMED = "claimed", "Claimed"


class ReviewSeat(models.Model):
    """One of the places to decide on a proposed item, under a round-robin or claimed policy: the item
    is ``user``'s to decide (dealt in turn, or claimed). An item has at most ``decisions_required``."""

    item = models.ForeignKey("memories.MemoryItem", on_delete=models.CASCADE, related_name="review_seats")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=8, choices=SeatSource.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "user"], name="reviewseat_unique_item_user")]
        indexes = [models.Index(fields=["user", "item"])]

    def __str__(self) -> str:
        return f"{self.user_id} {self.source} {self.item_id}"


class SavedQueueView(models.Model):
    """A reviewer's named set of queue filters (the queue's query string), offered as a link above the queue."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=80)
    query = models.CharField(max_length=2000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "user", "name"], name="savedqueueview_unique_bank_user_name")
        ]

    def __str__(self) -> str:
        return self.name


class GuidelinesRead(models.Model):
    """What a reviewer last read of a bank's guidelines (a digest of their text) and whether they keep the
    panel folded: the queue opens the guidelines at the first read and again when they change, and
    otherwise as the reviewer last left them (memories.review.guidelines)."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=64)
    folded = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bank", "user"], name="guidelinesread_unique_bank_user")]

    def __str__(self) -> str:
        return f"guidelines read by {self.user_id} in bank {self.bank_id}"
