"""An *Experience* is the paper's memory-bank entry: one past task (its query
text and embedding) and the items distilled from it. Trajectories point at the
experience they fed (trajectories → memories), so this app never imports the
trajectories app."""

import uuid

from django.db import models
from pgvector.django import HnswIndex, VectorField

from accounts.models import Bank

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
