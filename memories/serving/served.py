"""What agents are shown besides a search: the system block served with a
retrieval, and a run's retrievals (the lists of served items are memories.serving's)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from django.db import models

from memories.items.models import MemoryItem
from memories.serving.models import RetrievalEvent

SYSTEM_BLOCK_VERSION = "system_block_v2"
# A lesson cannot open or close the tags that delimit lessons (it is data, not a message to the agent).
_LESSON_TAG = re.compile(r"<(\s*/?\s*)(lesson)\b", re.IGNORECASE)
_PROMPTS = Path(__file__).resolve().parents[1] / "prompts"


@lru_cache(maxsize=4)
def system_block_preamble(version: str = SYSTEM_BLOCK_VERSION) -> str:
    return (_PROMPTS / f"{version}.txt").read_text(encoding="utf-8").strip()


def system_block_render(items: list[MemoryItem], *, version: str = SYSTEM_BLOCK_VERSION) -> str:
    """The text an agent puts in its system prompt: the preamble (which frames
    the lessons as data), then each item as ``## title`` / description /
    content between ``<lesson>`` and ``</lesson>`` (tags inside an item's text
    are defused). Empty when no items."""
    if not items:
        return ""
    parts = [system_block_preamble(version)]
    for item in items:
        text = _LESSON_TAG.sub(
            r"&lt;\1\2", f"## {item.title.strip()}\n{item.description.strip()}\n{item.content.strip()}"
        )
        parts.append(f"<lesson>\n{text}\n</lesson>")
    return "\n\n".join(parts)


def run_retrievals(*, first_id: int | None) -> list[RetrievalEvent]:
    """The retrievals of the run whose first retrieval has primary key
    ``first_id`` (what a trajectory links), first one first; [] for None."""
    if first_id is None:
        return []
    return list(
        RetrievalEvent.objects.filter(models.Q(pk=first_id) | models.Q(run_id=first_id))
        .order_by("pk")
        .only("pk", "public_id", "query", "arm", "results", "withheld", "created_at")
    )
