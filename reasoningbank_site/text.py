"""Text that PostgreSQL, email headers and templates can always take.

One mechanism for every text input: ``scrub_text`` replaces NUL (PostgreSQL
text cannot hold it) and lone surrogates (UTF-8 cannot encode them) — both
legal in JSON — by U+FFFD / '?'. API schemas use it through ``CleanStr``
(an annotated ``str``), whole JSON bodies through ``scrub_text``, the UI's
imported files likewise. Django form fields already refuse NUL
(``ProhibitNullCharactersValidator``). ``pretty_json`` pretty-prints agent
JSON of any depth."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Annotated, Any

from django.utils import timezone
from django.utils.timesince import timesince
from django.utils.translation import get_language
from pydantic import BeforeValidator

# Deeper JSON is shown as its raw text: json.dumps/json.loads recurse, and
# agent input (tool-call arguments) can be nested thousands of levels deep.
PRETTY_MAX_DEPTH = 64
# Appended where cut_text cut: "… [cut: 104,321 characters]".
_CUT_MARKER = re.compile(r" … \[cut: [\d,]+ characters\]$")


def scrub_text(value: Any) -> Any:
    """Return ``value`` with NUL and lone surrogates replaced in every string
    (dict keys included). The input is never mutated (a copy is made only when
    something needs replacing); nested lists/dicts are walked without recursion."""
    if not _any_dirty(value):
        return value
    holder: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, holder, 0)]
    while stack:
        source, target, key = stack.pop()
        if isinstance(source, str):
            target[key] = _scrub_str(source)
        elif isinstance(source, list):
            copy: list[Any] = [None] * len(source)
            target[key] = copy
            stack.extend((child, copy, i) for i, child in enumerate(source))
        elif isinstance(source, dict):
            copied: dict[Any, Any] = {}
            target[key] = copied
            for child_key, child in source.items():
                new_key = _scrub_str(child_key) if isinstance(child_key, str) else child_key
                copied[new_key] = None  # keeps the key order
                stack.append((child, copied, new_key))
        else:
            target[key] = source
    return holder[0]


def _any_dirty(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _needs_scrub(item):
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return False


def _needs_scrub(text: str) -> bool:
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _scrub_str(text: str) -> str:
    if not _needs_scrub(text):
        return text
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _scrub_if_str(value: Any) -> Any:
    return _scrub_str(value) if isinstance(value, str) else value


# A str field of an API schema: NUL and lone surrogates are replaced before validation.
CleanStr = Annotated[str, BeforeValidator(_scrub_if_str)]


def has_control_chars(text: str) -> bool:
    """True when ``text`` holds a control character other than tab (names are one line)."""
    return any((ord(ch) < 32 and ch != "\t") or ord(ch) == 127 for ch in text)


def json_depth(value: Any, limit: int) -> int:
    """Nesting depth of ``value`` (lists/dicts), counted without recursion;
    stops counting once ``limit`` is exceeded."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            if depth > limit:
                return depth
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _raw_depth(text: str, limit: int) -> int:
    """Bracket depth of JSON text (a cheap scan, strings included: an
    over-estimate is safe, it only means the raw text is shown)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif ch in "]}":
            depth -= 1
    return deepest


def pretty_json(raw: Any, *, max_depth: int = PRETTY_MAX_DEPTH) -> str:
    """Indented JSON for display. A string is parsed first (and returned as
    is when it is not JSON); anything nested deeper than ``max_depth`` is
    shown raw (a string as sent, other values compact on one line) instead
    of recursing — so every stored value renders."""
    if raw is None or raw == "":
        return ""
    if isinstance(raw, str):
        if _raw_depth(raw, max_depth) > max_depth:
            return raw
        try:
            raw = json.loads(raw)
        except (ValueError, TypeError, RecursionError):
            return raw
    if json_depth(raw, max_depth) > max_depth:
        return _compact(raw)
    try:
        return json.dumps(raw, indent=2, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return _compact(raw)


class _Literal(str):
    """Already-serialized text on the work stack of ``_compact``."""


def _compact(value: Any) -> str:
    """One-line JSON of ``value`` at any depth, built without recursion."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Literal):
            out.append(item)
        elif isinstance(item, dict):
            parts: list[Any] = [_Literal("{")]
            for i, (key, child) in enumerate(item.items()):
                parts += [_Literal(", " if i else ""), _Literal(json.dumps(str(key), ensure_ascii=False) + ": "), child]
            parts.append(_Literal("}"))
            stack.extend(reversed(parts))
        elif isinstance(item, (list, tuple)):
            parts = [_Literal("[")]
            for i, child in enumerate(item):
                parts += [_Literal(", " if i else ""), child]
            parts.append(_Literal("]"))
            stack.extend(reversed(parts))
        else:
            try:
                out.append(json.dumps(item, ensure_ascii=False, default=str))
            except (ValueError, TypeError):
                out.append(json.dumps(str(item), ensure_ascii=False))
    return "".join(out)


def cut_text(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its start followed by
    a visible marker saying how many characters were cut; the result never has
    more than ``limit`` characters."""
    if len(text) <= limit:
        return text
    keep = limit
    for _ in range(4):  # the marker's length depends on the count it shows; this settles in two passes
        marker = f" … [cut: {len(text) - keep:,} characters]"
        keep = max(limit - len(marker), 0)
    marker = f" … [cut: {len(text) - keep:,} characters]"
    return (text[:keep] + marker)[:limit]


def is_cut(text: str) -> bool:
    """Whether ``text`` ends with cut_text's marker."""
    return bool(_CUT_MARKER.search(text or ""))


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """ "1 item", "3 items", "2 trajectories": a count with its noun in the right number."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def ago(moment, *, now=None, seconds: bool = False) -> str:
    """How long ago ``moment`` was: "just now" under a minute (also for a
    clock a little ahead; Django's timesince alone says "0 minutes"), else
    "3 minutes ago" / "2 hours, 5 minutes ago". ``seconds=True`` (a review
    conflict, where seconds matter) says "12 s ago" from 5 s on and keeps
    only the largest unit after that."""
    if not moment:
        return ""
    now = now or timezone.now()
    elapsed = (now - moment).total_seconds()
    if elapsed < (5 if seconds else 60):
        return "just now"
    if elapsed < 60:
        return f"{int(elapsed)} s ago"
    if elapsed < 86400 and moment.tzinfo is UTC:  # as read from the database (a zone with DST: timesince)
        since = _since_within_a_day(int(elapsed) // 60, get_language())
    else:
        since = timesince(moment, now)
    return f"{since.split(',')[0] if seconds else since} ago"


@lru_cache(maxsize=1440 * 4)
def _since_within_a_day(minutes: int, language: str | None) -> str:
    """``timesince`` of a moment ``minutes`` whole minutes ago, under a day: it
    then depends on nothing else (no months or years to count; seconds are
    dropped), so a page of rows formats each count once (``timesince`` is a
    large share of a list row's rendering)."""
    now = datetime(2000, 1, 1, tzinfo=UTC)
    return timesince(now - timedelta(minutes=minutes), now)


_BANK_PROMPT = re.compile(r"^(?P<name>[a-z_]+)@bank-\d+-v(?P<number>\d+)(?P<fs>\+fs)?$")
_FILE_PROMPT = re.compile(r"^(?P<name>[a-z_]+)/v(?P<number>\d+)(?P<fs>\+fs)?$")


def prompt_version_label(version: str) -> str:
    """A recorded prompt version as people read it, without the bank's internal id:
    "judge@bank-7-v3+fs" → "judge v3 (custom) + examples", "judge/v1" → "judge v1 (default)";
    anything else as it is."""
    for pattern, kind in ((_BANK_PROMPT, "custom"), (_FILE_PROMPT, "default")):
        match = pattern.match(version or "")
        if match:
            examples = " + examples" if match["fs"] else ""
            return f"{match['name']} v{match['number']} ({kind}){examples}"
    return version or ""


def token_estimate(text: str) -> int:
    """The LLM tokens ``text`` costs, estimated without a tokenizer (none ships offline): one token per
    4 bytes of UTF-8, the usual rule for English with GPT-style tokenizers, which also counts a CJK
    character as about one token. Used for the memory block's cost; agents report their real usage."""
    if not text:
        return 0
    return -(-len(text.encode("utf-8")) // 4)
