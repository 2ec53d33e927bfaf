"""The MemoryGraft signature: an item whose text reproduces a tool
observation (a "successful procedure" planted in a page or file the agent
read) instead of the agent's own reasoning. Found by word overlap with the
observation steps of the trajectory it was distilled from."""

from __future__ import annotations

import re

from memories.trust.rules.findings import EXCERPT_MAX, Finding, Kind

# Step kinds that carry what the world said, not what the agent thought.
OBSERVATION_KINDS = ("observation", "tool_result")
SHINGLE = 6  # words per compared run
# An item is a copy when at least this share of its word runs appear in one observation…
COPIED_SHARE = 0.5
# …and it has at least this many runs (shorter texts are a phrase, not a copied procedure).
MIN_SHINGLES = 4

_WORD = re.compile(r"\w+")


def _shingles(words: list[str]) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)]


def _longest_copied_run(text: str, matches: list[re.Match], copied: list[bool]) -> str:
    """The longest stretch of ``text`` covered by copied word runs, as written (an exact excerpt)."""
    best, start = (0, 0, 0), None
    covered = [False] * len(matches)
    for i, hit in enumerate(copied):
        if hit:
            for j in range(i, i + SHINGLE):
                covered[j] = True
    for i, c in enumerate([*covered, False]):
        if c and start is None:
            start = i
        elif not c and start is not None:
            if i - start > best[0]:
                best = (i - start, start, i - 1)
            start = None
    length, first, last = best
    if not length:
        return ""
    return text[matches[first].start() : matches[last].end()][:EXCERPT_MAX]


def scan(text: str, steps: list[dict]) -> list[Finding]:
    """An OBSERVATION_COPY finding when ``text`` (the item's description and
    content) reproduces one of the observation ``steps``: the excerpt is the
    longest copied stretch, the step the observation it came from."""
    matches = list(_WORD.finditer(text))
    words = [m.group(0).lower() for m in matches]
    shingles = _shingles(words)
    if len(shingles) < MIN_SHINGLES:
        return []
    best: tuple[float, int | None, list[bool]] = (0.0, None, [])
    for step in steps:
        if not isinstance(step, dict) or step.get("kind") not in OBSERVATION_KINDS:
            continue
        seen = set(_shingles([w.lower() for w in _WORD.findall(str(step.get("content") or ""))]))
        if not seen:
            continue
        copied = [s in seen for s in shingles]
        share = sum(copied) / len(shingles)
        if share > best[0]:
            index = step.get("index")
            best = (share, index if isinstance(index, int) else None, copied)
    share, step_index, copied = best
    if share < COPIED_SHARE:
        return []
    excerpt = _longest_copied_run(text, matches, copied)
    return [Finding(Kind.OBSERVATION_COPY, excerpt, step_index)] if excerpt else []
