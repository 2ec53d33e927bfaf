"""A bank's review policy: the reviewers' guidelines (markdown, shown beside
the queue and the focus view) and how many independent decisions an item
needs. One row per bank, created on first use; absent means the defaults."""

from django.db import models

from accounts.models import Bank

GUIDELINES_MAX = 20_000


class ReviewPolicy(models.Model):
    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, related_name="review_policy")
    guidelines = models.TextField(blank=True, help_text="Markdown, shown to reviewers beside the queue.")
    decisions_required = models.PositiveSmallIntegerField(
        default=1, help_text="Independent reviewer decisions each item needs (1: the first decision stands)."
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"review policy of bank {self.bank_id}"
