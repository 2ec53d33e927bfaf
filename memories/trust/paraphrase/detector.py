"""Find lesson sentences that carry over, in other words, a directive planted
in the external content of their source run. Each sentence of an item is
compared, by the embedding model, with the directive sentences of the run's
tool results and observations (not the task, not the agent's thoughts): a
sentence at least SIMILAR to one of them, and closer to it than to the user's
task by TASK_MARGIN, is a finding. Only the strong directives count: words
addressed to an agent or an assistant, and redefinitions of what is allowed
or required ("from now on", "no longer", "is outdated", "counts as"). Plain
imperatives are what documentation says, and honest lessons restate them.
Thresholds tuned on tests/memories/trust/paraphrase_tune.json and the red-team
set (see docs/security.md for the measured rates)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memories.embedding.model import embed_texts
from memories.trust.paraphrase.directives import is_strong_directive
from memories.trust.paraphrase.sentences import sentences
from memories.trust.rules.findings import EXCERPT_MAX, Finding, Kind

DETECTOR = "paraphrase-1"
# Step kinds that carry what the world said (memories.trust.rules.graft reads the same ones).
EXTERNAL_KINDS = ("observation", "tool_result")
SIMILAR = 0.55  # cosine similarity (all-MiniLM-L6-v2) from which an item sentence restates a directive
TASK_MARGIN = 0.0  # …and it must be at least this much closer to the directive than to the user's task
# Caps on what one run costs: the sentences read per step, the directives compared per run, the item's sentences.
STEP_SENTENCES = 200
RUN_DIRECTIVES = 32
ITEM_SENTENCES = 24


@dataclass(frozen=True)
class Directive:
    text: str
    step: int


def directives(steps: Sequence[dict]) -> list[Directive]:
    """The strong directive sentences of the external-content ``steps`` (at most RUN_DIRECTIVES, in order)."""
    found: list[Directive] = []
    seen = set()
    for position, step in enumerate(steps or ()):
        if not isinstance(step, dict) or step.get("kind") not in EXTERNAL_KINDS:
            continue
        index = step.get("index") if isinstance(step.get("index"), int) else position
        for sentence in sentences(str(step.get("content") or ""), limit=STEP_SENTENCES):
            if sentence.text not in seen and is_strong_directive(sentence.text):
                seen.add(sentence.text)
                found.append(Directive(sentence.text, index))
                if len(found) >= RUN_DIRECTIVES:
                    return found
    return found


def scan(texts: Sequence[Sequence[str]], steps: Sequence[dict], task: str = "") -> list[list[Finding]]:
    """For each item (its fields' texts: title, description, content), the
    COPIED_INSTRUCTION findings: the item sentence (an exact substring of one
    field) and the step of the directive it restates. One model call for the
    whole run; none when the external content holds no strong directive."""
    planted = directives(steps)
    if not planted or not texts:
        return [[] for _ in texts]
    per_item = [[s.text for field in fields for s in sentences(field or "")][:ITEM_SENTENCES] for fields in texts]
    flat = list(dict.fromkeys(s for item in per_item for s in item))
    task = (task or "").strip()
    vectors = embed_texts([d.text for d in planted] + flat + ([task] if task else []))
    planted_v, flat_v = vectors[: len(planted)], vectors[len(planted) : len(planted) + len(flat)]
    task_sim = flat_v @ vectors[-1] if task else np.full(len(flat), -1.0, dtype=np.float32)
    sims = flat_v @ planted_v.T  # item sentence × directive
    row = {s: n for n, s in enumerate(flat)}
    out = []
    for item in per_item:
        found = []
        for sentence in dict.fromkeys(item):
            n = row[sentence]
            best = int(sims[n].argmax())
            if sims[n, best] >= SIMILAR and sims[n, best] - task_sim[n] >= TASK_MARGIN:
                found.append(Finding(Kind.COPIED_INSTRUCTION, sentence[:EXCERPT_MAX], planted[best].step))
        out.append(found)
    return out
