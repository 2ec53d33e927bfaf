"""Span provenance: which stretches of an item's text (title, description,
content) reproduce the external content the agent read (tool results and
observations: pages, files, API answers), the agent's own reasoning (its
thoughts, actions, tool calls and answer), or the user's task, and which are
the distiller's own words. Found by runs of consecutive tokens shared with a
step (text.WORD_RUN words, or text.CHAR_RUN characters of a spaceless script)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from memories.trust.provenance.text import Token, grams, run_length, tokens

EXTERNAL, AGENT, TASK, DISTILLER = "external", "agent", "task", "distiller"
# A stretch found in several places is credited to the first of these: what the user asked is the user's even
# when a page repeats it, and what a page said stays the page's even when the agent's thought quotes it.
PRIORITY = (TASK, EXTERNAL, AGENT)
STEP_SOURCES = {
    "observation": EXTERNAL,
    "tool_result": EXTERNAL,
    "thought": AGENT,
    "action": AGENT,
    "tool_call": AGENT,
    "answer": AGENT,
    "refinement": AGENT,
    "user": TASK,
    "system": TASK,
}
FIELDS = ("title", "description", "content")


@dataclass(frozen=True)
class Span:
    field: str
    start: int
    end: int
    source: str  # EXTERNAL, AGENT, TASK or DISTILLER
    step: int | None = None  # the source step's index (external and agent spans)

    def as_dict(self) -> dict:
        return asdict(self)


def _step_text(step: dict) -> str:
    text = str(step.get("content") or "")
    if step.get("arguments"):
        text += f"\n{step['arguments']}"
    return text


class Sources:
    """The texts an item may have taken words from, tokenized once; their
    n-grams built per run length on first use."""

    def __init__(self, steps: Iterable[dict] = (), task: str = "") -> None:
        self.texts: list[tuple[str, int | None, list[Token]]] = []
        if task:
            self.texts.append((TASK, None, tokens(task)))
        for position, step in enumerate(steps or ()):
            if not isinstance(step, dict) or step.get("kind") not in STEP_SOURCES:
                continue
            index = step.get("index") if isinstance(step.get("index"), int) else position
            self.texts.append((STEP_SOURCES[step["kind"]], index, tokens(_step_text(step))))
        self._grams: dict[int, list[tuple[str, int | None, set]]] = {}

    def grams(self, n: int) -> list[tuple[str, int | None, set]]:
        if n not in self._grams:
            rows = [(source, step, grams(toks, n)) for source, step, toks in self.texts if len(toks) >= n]
            self._grams[n] = sorted(rows, key=lambda r: PRIORITY.index(r[0]))
        return self._grams[n]

    def where(self, key: tuple[str, ...], n: int) -> tuple[str, int | None] | None:
        for source, step, seen in self.grams(n):
            if key in seen:
                return source, step
        return None


def field_spans(field: str, text: str, sources: Sources) -> list[Span]:
    """The spans of one field, covering every token of it in order."""
    toks = tokens(text)
    if not toks:
        return []
    n = run_length(toks)
    rank = {s: i for i, s in enumerate(PRIORITY)}
    labels: list[tuple[str, int | None]] = [(DISTILLER, None)] * len(toks)
    for i in range(len(toks) - n + 1):
        found = sources.where(tuple(t.norm for t in toks[i : i + n]), n)
        if found is None:
            continue
        for j in range(i, i + n):
            if labels[j][0] == DISTILLER or rank[found[0]] < rank[labels[j][0]]:
                labels[j] = found
    out: list[Span] = []
    for tok, (source, step) in zip(toks, labels, strict=True):
        if out and out[-1].source == source and out[-1].step == step:
            out[-1] = Span(field, out[-1].start, tok.end, source, step)
        else:
            out.append(Span(field, tok.start, tok.end, source, step))
    return out


def item_spans(
    *,
    title: str,
    description: str,
    content: str,
    steps: Iterable[dict] = (),
    task: str = "",
    sources: Sources | None = None,
) -> list[Span]:
    """The provenance of an item's three fields against its source ``steps`` and ``task`` (or ``sources``
    built from them once for several items of one run)."""
    sources = sources or Sources(steps, task)
    values = {"title": title, "description": description, "content": content}
    return [span for field in FIELDS for span in field_spans(field, values[field] or "", sources)]


def sources_within(spans: Iterable[Span], field: str, start: int, end: int) -> set[str]:
    """The sources of the spans of ``field`` that overlap [start, end)."""
    return {s.source for s in spans if s.field == field and s.start < end and s.end > start}
