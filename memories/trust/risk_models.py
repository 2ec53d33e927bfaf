"""Risk findings: what the risk scan (memories.trust.rules) found in an item or
the steps it was distilled from, and who confirmed having read it. An item
with an unconfirmed finding is never served."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from accounts.models import ApiToken
from memories.items.models import MemoryItem


class FindingSource(models.TextChoices):
    ITEM = "item", "The item's text"
    STEP = "step", "A step of its source trajectory"


class RiskFinding(models.Model):
    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="risk_findings")
    kind = models.CharField(max_length=40)
    excerpt = models.TextField()
    # The source trajectory's step index, when the finding came from (or copies) a step.
    step = models.IntegerField(null=True, blank=True)
    found_in = models.CharField(max_length=8, choices=FindingSource.choices, default=FindingSource.ITEM)
    # What found it: the rules' version ("rules-3"), or an LLM check's prompt version.
    detector = models.CharField(max_length=60)
    # A scoring detector's score (the anomaly score); null for the others.
    score = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A reviewer (or a review token) who approved the item knowing of this finding.
    confirmed = models.BooleanField(default=False)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    confirmed_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["id"]
        indexes = [
            # Retrieval's "no unconfirmed finding" check: one probe per candidate item.
            models.Index(fields=["item"], condition=Q(confirmed=False), name="riskfinding_unconfirmed"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.excerpt[:60]}"
