"""A task's check: decides a try's success from its final answer, without a judge.

``{"type": "contains" | "equals" | "regex", "value": str, "ignore_case": bool}``: the answer contains
the value, equals it (both stripped of surrounding whitespace), or matches the regular expression
anywhere. A regular expression runs under a time guard (the ``regex`` library's timeout), so a
pattern that backtracks for ever on an answer fails the check instead of holding a request."""

from __future__ import annotations

import regex

CHECK_TYPES = ("contains", "equals", "regex")
# Long enough for any sane pattern on a 200,000-character answer; short enough not to hold a request.
REGEX_TIMEOUT_SECONDS = 0.5


def check_describe(check: dict) -> str:
    """The check in a few words, for the try's judgment rationale."""
    case = " (any case)" if check.get("ignore_case") else ""
    verb = {"contains": "contains", "equals": "equals", "regex": "matches"}.get(check.get("type"), "?")
    return f"the final answer {verb} {check.get('value', '')!r}{case}"


def check_passes(check: dict | None, answer: str) -> bool | None:
    """Whether ``answer`` passes ``check``: None when there is no check (the verdict decides).
    A malformed check (unknown type, value not a string) or a regular expression that does not
    compile or runs past REGEX_TIMEOUT_SECONDS fails: it never passes by accident."""
    if not check:
        return None
    kind, value, ignore_case = check.get("type"), check.get("value"), bool(check.get("ignore_case"))
    if kind not in CHECK_TYPES or not isinstance(value, str):
        return False
    answer = answer or ""
    if kind == "regex":
        try:
            flags = regex.IGNORECASE if ignore_case else 0
            return regex.search(value, answer, flags=flags, timeout=REGEX_TIMEOUT_SECONDS) is not None
        except (regex.error, TimeoutError):
            return False
    if ignore_case:
        value, answer = value.casefold(), answer.casefold()
    if kind == "equals":
        return answer.strip() == value.strip()
    return value in answer
