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
from memories.trust.paraphrase.directives import is_strong_directive, strong_directive_offsets
from memories.trust.paraphrase.sentences import sentence_at, sentences
from memories.trust.rules.findings import EXCERPT_MAX, Finding, Kind
from memories.trust.rules.graft import OBSERVATION_KINDS

DETECTOR = "paraphrase-1"
# An item whose whole text (the vector the bank already stored) is less similar than this to every directive is
# not cut into sentences: none of its sentences comes near one (the tune set's flagged items score 0.41 or more).
ITEM_GATE = 0.3
SIMILAR = 0.55  # cosine similarity (all-MiniLM-L6-v2) from which an item sentence restates a directive
TASK_MARGIN = 0.0  # …and it must be at least this much closer to the directive than to the user's task
# Caps on what one run costs: the directives compared per run (the first ones), the item's sentences.
RUN_DIRECTIVES = 64
ITEM_SENTENCES = 24


@dataclass(frozen=True)
class Directive:
    text: str
    step: int


def directives(steps: Sequence[dict]) -> list[Directive]:
    """The strong directive sentences of the external-content ``steps`` (at
    most RUN_DIRECTIVES, first ones first). A step is searched whole, however
    long; only the sentences around its strong forms are cut out."""
    found: list[Directive] = []
    seen = set()
    for position, step in enumerate(steps or ()):
        if not isinstance(step, dict) or step.get("kind") not in OBSERVATION_KINDS:
            continue
        text = str(step.get("content") or "")
        offsets = strong_directive_offsets(text)
        if not offsets:
            continue
        index = step.get("index") if isinstance(step.get("index"), int) else position
        for offset in offsets:
            sentence = sentence_at(text, offset)
            if sentence is None or sentence.text in seen or not is_strong_directive(sentence.text):
                continue
            seen.add(sentence.text)
            found.append(Directive(sentence.text, index))
            if len(found) >= RUN_DIRECTIVES:
                return found
    return found


def scan(
    texts: Sequence[Sequence[str]],
    steps: Sequence[dict],
    task: str = "",
    vectors: Sequence[np.ndarray | None] | None = None,
) -> list[list[Finding]]:
    """For each item (its fields' texts: title, description, content), the
    COPIED_INSTRUCTION findings: the item sentence (an exact substring of one
    field) and the step of the directive it restates. ``vectors``: the items'
    stored embeddings when at hand (an item far from every directive is not
    cut into sentences). No model call when the external content holds no
    strong directive; else one for the directives, one for the task (none when
    the distillation embedded it already), one for the sentences of the items
    that come near them."""
    found: list[list[Finding]] = [[] for _ in texts]
    planted = directives(steps)
    if not planted or not texts:
        return found
    task = (task or "").strip()
    planted_v = embed_texts([d.text for d in planted])
    task_v = embed_texts([task])[0] if task else None  # a distillation's task is usually embedded already
    near = [
        n
        for n in range(len(texts))
        if vectors is None or vectors[n] is None or float((planted_v @ np.asarray(vectors[n])).max()) >= ITEM_GATE
    ]
    per_item = {n: [s.text for f in texts[n] for s in sentences(f or "")][:ITEM_SENTENCES] for n in near}
    flat = list(dict.fromkeys(s for item in per_item.values() for s in item))
    if not flat:
        return found
    flat_v = embed_texts(flat)
    task_sim = flat_v @ task_v if task_v is not None else np.full(len(flat), -1.0, dtype=np.float32)
    sims = flat_v @ planted_v.T  # item sentence × directive
    row = {s: n for n, s in enumerate(flat)}
    for n, item in per_item.items():
        for sentence in dict.fromkeys(item):
            i = row[sentence]
            best = int(sims[i].argmax())
            if sims[i, best] >= SIMILAR and sims[i, best] - task_sim[i] >= TASK_MARGIN:
                found[n].append(Finding(Kind.COPIED_INSTRUCTION, sentence[:EXCERPT_MAX], planted[best].step))
    return found
