"""Sentences of a text with their place in it, so a finding's excerpt is the
exact text the reviewer reads."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A sentence ends at . ! ? ; (or a colon before a capital) followed by space, or at a line break.
# Dots inside numbers, versions and file names ("1.7 L", "v1.2", "setup.py") are not followed by space.
_BOUNDARY = re.compile(r"(?<=[.!?;。！？])\s+|(?<=:)\s+(?=[A-ZÀ-Ý\[\"'«])|\s*\n+\s*")
# Fewer letters than this: a label or a number, not a sentence.
MIN_LETTERS = 8


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int  # offset in the text it was cut from


def sentences(text: str, limit: int | None = None) -> list[Sentence]:
    """The sentences of ``text`` (at most ``limit``, first ones first), stripped, each an exact substring of it."""
    out, start = [], 0
    for gap in [*_BOUNDARY.finditer(text or ""), None]:
        end = gap.start() if gap is not None else len(text or "")
        piece = (text or "")[start:end]
        stripped = piece.strip(" \t-*•>#")
        if sum(ch.isalpha() for ch in stripped) >= MIN_LETTERS:
            out.append(Sentence(stripped, start + piece.index(stripped)))
            if limit is not None and len(out) >= limit:
                break
        if gap is not None:
            start = gap.end()
    return out
