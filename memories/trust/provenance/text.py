"""Tokens of any language for comparing texts: case, punctuation, Unicode
forms and invisible characters do not count. Words are runs of letters and
digits; Chinese, Japanese and Thai have no spaces between words, so each of
their characters is a token of its own (character n-grams)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Scripts written without spaces between words: Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar.
_NO_SPACE = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u31f0-\u31ff\uff66-\uff9f"
    "\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f"
)
# Characters an attacker may slip inside a word to break a match: zero-width, joiners, soft hyphen, BOM, tags.
_INVISIBLE = "\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f"
_TOKEN = re.compile(rf"[{_NO_SPACE}]|(?:[^\W{_NO_SPACE}]|[{_INVISIBLE}])+")
_STRIP = re.compile(rf"[{_INVISIBLE}]")

# Consecutive tokens compared at once: a shared run this long is a copy, not a common phrase.
WORD_RUN = 4
CHAR_RUN = 6


@dataclass(frozen=True)
class Token:
    norm: str  # NFKC, case-folded, without accents or invisible characters
    start: int
    end: int
    dense: bool  # a character of a script without spaces


def normalize(word: str) -> str:
    """One token's comparable form: compatibility forms folded (full-width
    letters, ligatures), case folded, combining accents and invisible characters dropped."""
    word = unicodedata.normalize("NFKD", _STRIP.sub("", word)).casefold()
    return unicodedata.normalize("NFC", "".join(c for c in word if not unicodedata.combining(c)))


def tokens(text: str) -> list[Token]:
    """The tokens of ``text`` with their character offsets in it."""
    out = []
    for match in _TOKEN.finditer(text or ""):
        norm = normalize(match.group(0))
        if norm:
            dense = len(match.group(0)) == 1 and re.match(f"[{_NO_SPACE}]", match.group(0)) is not None
            out.append(Token(norm, match.start(), match.end(), dense))
    return out


def run_length(toks: list[Token]) -> int:
    """How many tokens make a copied run in ``toks``: characters for a text mostly in a spaceless script."""
    dense = sum(t.dense for t in toks)
    return CHAR_RUN if toks and dense * 2 >= len(toks) else WORD_RUN


def grams(toks: list[Token], n: int) -> set[tuple[str, ...]]:
    """Every run of ``n`` consecutive tokens (a shorter text: itself, when it is not empty)."""
    norms = [t.norm for t in toks]
    if len(norms) < n:
        return {tuple(norms)} if norms else set()
    return {tuple(norms[i : i + n]) for i in range(len(norms) - n + 1)}


# Where a sentence ends: a full stop before a space (not the dot of "docs.python.org" or "$142.37"), a
# question or exclamation mark, a semicolon or colon before a space, CJK end marks, a line break.
_END = re.compile(r"[.!?;:](?=\s|$)|[!?]|[。！？；]|\n")


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text``, without the spaces around it."""
    text = text or ""
    out, start = [], 0
    for cut in [m.end() for m in _END.finditer(text)] + [len(text)]:
        a, b = start, cut
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
        start = cut
    return out
