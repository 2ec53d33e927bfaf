"""Sentences of a text with their place in it, so a finding's excerpt is the
exact text the reviewer reads."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A sentence ends at . ! ? ; (or a colon before a capital) followed by space, or at a line break.
# Dots inside numbers, versions and file names ("1.7 L", "v1.2", "setup.py") are not followed by space.
_BOUNDARY = re.compile(r"(?<=[.!?;。！？])\s+|(?<=:)\s+(?=[A-ZÀ-Ý\[\"'«])|\s*\n+\s*")
# Around a directive, the whole sentence: its clauses after a semicolon say what it is about.
_FULL_STOP = re.compile(r"(?<=[.!?。！？])\s+|\s*\n+\s*")
# Fewer letters than this: a label or a number, not a sentence.
MIN_LETTERS = 8
_NOT_LETTER = re.compile(r"[\W\d_]+")


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int  # offset in the text it was cut from


def sentences(text: str, limit: int | None = None) -> list[Sentence]:
    """The sentences of ``text`` (at most ``limit``, first ones first), stripped, each an exact substring of it."""
    text = text or ""
    out, start = [], 0
    gaps = _BOUNDARY.finditer(text)  # lazily: a long page is cut only as far as ``limit`` needs
    while start <= len(text):
        gap = next(gaps, None)
        end = gap.start() if gap is not None else len(text)
        piece = text[start:end]
        stripped = piece.strip(" \t-*•>#")
        if len(_NOT_LETTER.sub("", stripped)) >= MIN_LETTERS:
            out.append(Sentence(stripped, start + piece.index(stripped)))
            if limit is not None and len(out) >= limit:
                break
        if gap is None:
            break
        start = gap.end()
    return out


# How far back from a match the start of its sentence is looked for (a longer sentence is cut there).
SENTENCE_REACH = 500


def sentence_at(text: str, offset: int) -> Sentence | None:
    """The whole sentence of ``text`` around ``offset`` (to its full stops: a
    semicolon or a colon does not end it), found by looking only near it (a
    long page is not cut whole); None when it is too short to be one."""
    floor = max(0, offset - SENTENCE_REACH)
    start = floor
    for gap in _FULL_STOP.finditer(text, floor, offset):
        start = gap.end()
    after = _FULL_STOP.search(text, offset)
    piece = text[start : after.start() if after is not None else len(text)]
    stripped = piece.strip(" \t-*•>#")
    if len(_NOT_LETTER.sub("", stripped)) < MIN_LETTERS:
        return None
    return Sentence(stripped, start + piece.index(stripped))
