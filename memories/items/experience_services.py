"""Experiences: the past tasks of a bank (the paper's memory entries)."""

from __future__ import annotations

from accounts.models import Bank
from memories.embedding.model import embed_text
from memories.items.experiences import Experience
from reasoningbank_site.errors import Invalid


def experience_create(*, bank: Bank, task: str, task_id: str = "") -> Experience:
    """A past task of the bank (the paper's memory entry), its text embedded
    inline for experience-mode retrieval. Raises Invalid for an empty task.
    One insert, so no transaction of its own (inside the caller's: no savepoint)."""
    task = (task or "").strip()
    if not task:
        raise Invalid("An experience needs the task text.")
    return Experience.objects.create(bank=bank, task=task, task_id=task_id or "", embedding=embed_text(task))
