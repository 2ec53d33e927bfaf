"""An item's provenance as stored: computed from its source steps when it is
proposed and again when its text is edited; "unknown" (with the reason) when
they cannot be read (written by a person, imported, steps purged by retention)."""

from django.db import models

from memories.items.models import MemoryItem


class ProvenanceStatus(models.TextChoices):
    KNOWN = "known", "Known"
    UNKNOWN = "unknown", "Unknown"


class ItemProvenance(models.Model):
    item = models.OneToOneField(MemoryItem, on_delete=models.CASCADE, related_name="provenance")
    status = models.CharField(max_length=8, choices=ProvenanceStatus.choices)
    # Why it is unknown, in words a reviewer reads ("the source steps were purged on 2026-05-01").
    reason = models.CharField(max_length=300, blank=True)
    # [{field, start, end, source: external|agent|task|distiller, step}] over the item's text when computed.
    spans = models.JSONField(default=list)
    # What computed it (spans' method version), so a later method can be told apart.
    method = models.CharField(max_length=40)
    computed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.item_id}: {self.status}"
