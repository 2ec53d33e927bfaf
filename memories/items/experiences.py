"""An *Experience* is the paper's memory-bank entry: one past task (its query
text and embedding) and the items distilled from it. Trajectories point at the
experience they fed (trajectories → memories), so this app never imports the
trajectories app."""

from __future__ import annotations

import uuid

from django.db import models
from pgvector.django import HnswIndex, VectorField

from accounts.models import Bank
from memories.embedding.model import embed_text
from reasoningbank_site.errors import Invalid

EMBEDDING_DIM = 384


class Experience(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="experiences")
    task = models.TextField()
    task_id = models.CharField(max_length=200, blank=True, db_index=True)
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            HnswIndex(
                name="experience_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return self.task[:80]


def experience_create(*, bank: Bank, task: str, task_id: str = "") -> Experience:
    """A past task of the bank (the paper's memory entry), its text embedded
    inline for experience-mode retrieval. Raises Invalid for an empty task.
    One insert, so no transaction of its own (inside the caller's: no savepoint)."""
    task = (task or "").strip()
    if not task:
        raise Invalid("An experience needs the task text.")
    return Experience.objects.create(bank=bank, task=task, task_id=task_id or "", embedding=embed_text(task))
