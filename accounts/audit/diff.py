"""An audit event's before/after snapshots as a readable change list: one
line per field that changed ("status: proposed → approved"), long text as a
word diff. Plain data for the template, which escapes every piece."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field

from django.core.serializers.json import DjangoJSONEncoder

# Text longer than this (or spanning lines) is shown as a word diff instead of "old → new".
LONG_TEXT = 80
# Unchanged words kept on each side of a change; longer unchanged runs are cut to "…".
CONTEXT_WORDS = 8

_TOKENS = re.compile(r"\s+|[^\s]+")


@dataclass
class FieldChange:
    name: str
    old: str | None = None  # None: the field is not in that snapshot
    new: str | None = None
    words: list[tuple[str, str]] = field(default_factory=list)  # ("equal" | "delete" | "insert", text)


def _text(value) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return ", ".join(str(v) for v in value) if value else "—"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(", ", ": "))


def _elide(tokens: list[str], *, head: bool, tail: bool) -> str:
    """An unchanged run, cut to its last/first CONTEXT_WORDS words next to a change."""
    words = [i for i, t in enumerate(tokens) if not t.isspace()]
    if len(words) <= 2 * CONTEXT_WORDS:
        return "".join(tokens)
    # Leading/trailing spaces are kept: they separate this run from the change next to it.
    keep_start = "".join(tokens[: words[CONTEXT_WORDS - 1] + 1]) if head else ""
    keep_end = "".join(tokens[words[-CONTEXT_WORDS] :]) if tail else ""
    return (
        " … ".join(part for part in (keep_start, keep_end) if part)
        if head and tail
        else (f"{keep_start} …" if head else f"… {keep_end}" if tail else "…")
    )


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """``old`` → ``new`` as ("equal" | "delete" | "insert", text) runs, by word
    (difflib), with long unchanged runs cut to a few words around each change."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    opcodes = matcher.get_opcodes()
    runs: list[tuple[str, str]] = []
    for index, (op, i1, i2, j1, j2) in enumerate(opcodes):
        if op == "equal":
            first, last = index == 0, index == len(opcodes) - 1
            # Keep the words next to a change: after one (head) and before one (tail).
            runs.append(("equal", _elide(a[i1:i2], head=not first, tail=not last)))
            continue
        if op in ("delete", "replace"):
            runs.append(("delete", "".join(a[i1:i2])))
        if op in ("insert", "replace"):
            runs.append(("insert", "".join(b[j1:j2])))
    return runs


def _is_long(*texts: str) -> bool:
    return any(len(t) > LONG_TEXT or "\n" in t for t in texts)


def audit_changes(before: dict | None, after: dict | None) -> list[FieldChange]:
    """The fields that differ between two snapshots, in the snapshots' order.
    A creation (no before) lists the new values, a deletion (no after) the old
    ones; a snapshot that is not a dict is one field named "value"."""
    if before is not None and not isinstance(before, dict):
        before = {"value": before}
    if after is not None and not isinstance(after, dict):
        after = {"value": after}
    old_fields, new_fields = before or {}, after or {}
    names = list(old_fields) + [name for name in new_fields if name not in old_fields]
    changes = []
    for name in names:
        in_old, in_new = name in old_fields, name in new_fields
        if in_old and in_new and old_fields[name] == new_fields[name]:
            continue
        old = _text(old_fields[name]) if in_old else None
        new = _text(new_fields[name]) if in_new else None
        change = FieldChange(name=name, old=old, new=new)
        if old is not None and new is not None and _is_long(old, new):
            change.words = word_diff(old, new)
        changes.append(change)
    return changes
