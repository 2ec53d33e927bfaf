"""The optional LLM second opinion on the risk scan (a bank's trust policy's
``llm_risk_check``): after a distillation's items are stored, the LLM reads
them and may add findings, recorded with the prompt version
(``llm:risk_check/v1``). Only excerpts found word for word in an item are
kept. It can only add findings (an item with an unconfirmed one is not
served), so a failed or unreadable answer leaves the rules' findings as they
are and the trajectory done."""

from __future__ import annotations

import json
import logging
import re

from memories.items.models import MemoryItem
from memories.trust.models import TrustPolicy
from memories.trust.risks import memory_item_findings_add
from memories.trust.rules.findings import KIND_LABELS, Finding
from trajectories.pipeline.llm import chat, distill_model_for
from trajectories.pipeline.llm_errors import LLMError
from trajectories.pipeline.prompting import neutralize
from trajectories.prompts import prompt_render

logger = logging.getLogger(__name__)

_LESSON_TAGS = re.compile(r"<(\s*/?\s*)(lessons?)\b", re.IGNORECASE)


def _lessons_block(items: list[MemoryItem]) -> str:
    parts = []
    for n, item in enumerate(items, start=1):
        text = f"Lesson {n}\nTitle: {item.title}\nDescription: {item.description}\nContent: {item.content}"
        parts.append(_LESSON_TAGS.sub(lambda m: "&lt;" + m.group(1) + m.group(2), neutralize(text)))
    return "\n\n".join(parts)


def _parse(answer: str, items: list[MemoryItem]) -> dict[int, list[Finding]]:
    """The answer's findings per item index, keeping only known kinds and exact excerpts."""
    start, end = answer.find("{"), answer.rfind("}")
    try:
        data = json.loads(answer[start : end + 1]) if start >= 0 else {}
    except ValueError:
        return {}
    found: dict[int, list[Finding]] = {}
    for entry in data.get("findings", []) if isinstance(data, dict) else []:
        if not isinstance(entry, dict):
            continue
        n, kind, excerpt = entry.get("lesson"), entry.get("kind"), entry.get("excerpt")
        if not (isinstance(n, int) and 1 <= n <= len(items) and kind in KIND_LABELS and isinstance(excerpt, str)):
            continue
        item = items[n - 1]
        excerpt = excerpt.strip()[:200]
        if excerpt and excerpt in f"{item.title}\n{item.description}\n{item.content}":
            found.setdefault(n - 1, []).append(Finding(kind, excerpt))
    return found


def risk_second_opinion(*, bank, items, trajectory_ids: list[int]) -> int:
    """Ask the LLM about the new proposals of ``items`` when the bank's policy
    wants it; returns how many findings it added (0 when off or on failure)."""
    fresh = [i for i in items if i.pk is not None and getattr(i, "supported_by", None) is None]
    if not fresh or not TrustPolicy.objects.filter(bank=bank, llm_risk_check=True).exists():
        return 0
    prompt, version = prompt_render("risk_check", lessons=_lessons_block(fresh))
    try:
        answer = chat(
            model=distill_model_for(bank),
            messages=[{"role": "user", "content": prompt}],
            purpose="distill",
            bank_id=bank.pk,
            trajectory_ids=trajectory_ids,
        )
    except LLMError as exc:
        logger.warning("LLM risk check skipped for bank %s: %s", bank.pk, exc)
        return 0
    added = 0
    for index, findings in _parse(answer, fresh).items():
        added += len(memory_item_findings_add(item=fresh[index], findings=findings, detector=f"llm:{version}"))
    return added
