"""Several reviewers on one queue: who has an item open, and who reviews which slice of the queue."""

import uuid

from django.conf import settings
from django.db import models

from accounts.models import Bank
from memories.items.models import TAG_MAX_LENGTH, ItemOrigin, MemoryItem


class ReviewPresence(models.Model):
    """A reviewer has ``item`` open in the focus view: refreshed by the page's
    heartbeat, shown to the others until ``last_seen`` is older than the expiry."""

    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    last_seen = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "user"], name="reviewpresence_unique_item_user")]
        indexes = [models.Index(fields=["item", "last_seen"])]

    def __str__(self) -> str:
        return f"{self.user_id} on {self.item_id}"


class ReviewAssignment(models.Model):
    """A slice of a bank's review queue given to one reviewer: the proposed
    items matching every criterion set (origin, verdict, agent, tag) plus the
    explicitly listed items. No criterion and no items: the whole queue."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="review_assignments")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    origin = models.CharField(max_length=20, choices=ItemOrigin.choices, blank=True)
    verdict = models.CharField(max_length=16, blank=True)
    agent = models.CharField(max_length=200, blank=True)
    tag = models.CharField(max_length=TAG_MAX_LENGTH, blank=True)
    items = models.ManyToManyField(MemoryItem, blank=True, related_name="+")
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["bank", "reviewer"])]

    def __str__(self) -> str:
        return f"{self.reviewer_id}: {self.describe()}"

    @property
    def has_criteria(self) -> bool:
        return bool(self.origin or self.verdict or self.agent or self.tag)

    def describe(self) -> str:
        """The criteria in words: "origin failure, tag auth" ("the whole queue" when none is
        set; with listed items and no criterion the slice is those items alone)."""
        parts = []
        if self.origin:
            parts.append(f"origin {self.origin}")
        if self.verdict:
            parts.append(f"verdict {self.verdict}")
        if self.agent:
            parts.append(f"agent {self.agent}")
        if self.tag:
            parts.append(f"tag {self.tag}")
        return ", ".join(parts) if parts else "the whole queue"
