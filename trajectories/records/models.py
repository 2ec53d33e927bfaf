"""Reviewers' comments on memory items and trajectories."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import Bank
from memories.items.models import MemoryItem
from trajectories.models import Trajectory

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
