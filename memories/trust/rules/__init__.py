"""The risk scan: deterministic rules that mark a memory item (and the
trajectory steps it was distilled from) as a possible poisoning attempt.
One module per rule family: ``instructions`` (injected instructions, role
changes, disabled safeguards), ``outbound`` (exfiltration, payment changes),
``execution`` (remote code, unknown package indexes), ``hidden`` (invisible
characters, blobs, external images and links, secrets) and ``graft`` (text
copied from a tool observation). Pure functions of text: no database.
``topics`` beside them is no rule family: it makes no finding, it tells
safe auto-approval which items a human must see whatever the rules say."""

from __future__ import annotations

from memories.trust.rules import execution, graft, hidden, instructions, outbound
from memories.trust.rules.findings import Finding, Kind, unique

# The version of the rules, recorded on every finding (a re-scan under new rules can be told apart).
RULES_VERSION = "rules-3"

# The families run on the source steps: the ones that rarely fire on ordinary tool output (web pages hold
# links, images and encoded data all the time; only what they tell the agent to do is a risk there).
_SOURCE_FAMILIES = (instructions.scan, outbound.scan, execution.scan)


def scan_text(text: str) -> list[Finding]:
    """Every rule family's findings in one text (an item's own text)."""
    text = text or ""
    return unique([*instructions.scan(text), *outbound.scan(text), *execution.scan(text), *hidden.scan(text)])


def scan_item(*, title: str, description: str, content: str, steps: list[dict] | tuple = ()) -> list[Finding]:
    """The findings of one item: its own text (every family), the MemoryGraft
    overlap with the observation ``steps`` of its source trajectory, and the
    instructions found in those steps (with their step index)."""
    found = []
    for text in (title, description, content):
        found += scan_text(text)
    found += graft.scan(f"{description}\n{content}", list(steps))
    found += scan_steps(steps)
    return unique(found)


def scan_steps(steps: list[dict] | tuple) -> list[Finding]:
    """What the source steps tell the agent to do (instructions, outbound, execution) plus hidden characters."""
    found = []
    for step in steps or ():
        if not isinstance(step, dict):
            continue
        index = step.get("index") if isinstance(step.get("index"), int) else None
        text = str(step.get("content") or "")
        if step.get("arguments"):
            text += f"\n{step['arguments']}"
        hits = [f for family in _SOURCE_FAMILIES for f in family(text)]
        hits += [f for f in hidden.scan(text) if f.kind == Kind.HIDDEN_CHARACTERS]
        found += [Finding(f.kind, f.excerpt, index) for f in hits]
    return found


__all__ = ["KIND_LABELS", "RULES_VERSION", "Finding", "Kind", "scan_item", "scan_steps", "scan_text"]
