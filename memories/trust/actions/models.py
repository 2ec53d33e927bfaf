"""The actions each item recommends (memories.trust.actions.extract), one row
per (item, kind, value), kept current when its text changes. "Has the bank
approved this action" is one indexed lookup joined to the items' status, so
nothing moves when an item is approved, archived or rejected."""

from django.db import models

from accounts.models import Bank
from memories.items.models import MemoryItem


class ItemAction(models.Model):
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="recommended_actions")
    kind = models.CharField(max_length=16)  # shapes.ActionKind
    value = models.CharField(max_length=500)  # normalised: what approvals and the task are compared on
    excerpt = models.TextField()  # the exact text it was read from
    risks = models.CharField(max_length=200, blank=True)  # a command's risky parts, comma-separated

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["bank", "kind", "value"], name="itemaction_bank_kind_value")]
        constraints = [models.UniqueConstraint(fields=["item", "kind", "value"], name="itemaction_once_per_item")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.value[:60]}"
