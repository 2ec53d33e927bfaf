"""What a risk rule reports: one finding (kind, the exact excerpt, the source
step when known) and the helpers every rule family shares."""

from __future__ import annotations

import re
from dataclasses import dataclass

# An excerpt is what a reviewer reads in the badge: the matched text, cut to this many characters.
EXCERPT_MAX = 200


class Kind:
    """The finding kinds, one per thing a reviewer should look at."""

    INJECTED_INSTRUCTION = "injected_instruction"
    ROLE_CHANGE = "role_change"
    EXFILTRATION = "exfiltration"
    REMOTE_EXECUTION = "remote_execution"
    UNTRUSTED_PACKAGE_INDEX = "untrusted_package_index"
    DISABLED_SAFEGUARD = "disabled_safeguard"
    PAYMENT_CHANGE = "payment_change"
    HIDDEN_CHARACTERS = "hidden_characters"
    ENCODED_BLOB = "encoded_blob"
    EXTERNAL_IMAGE = "external_image"
    EXTERNAL_LINK = "external_link"
    SECRET = "secret"
    OBSERVATION_COPY = "observation_copy"
    # Kinds that need more than the item's text: where its words came from, what the bank has approved before.
    COPIED_INSTRUCTION = "copied_instruction"
    UNAPPROVED_ACTION = "unapproved_action"
    ANOMALY = "anomaly"


KIND_LABELS = {
    Kind.INJECTED_INSTRUCTION: "Injected instruction",
    Kind.ROLE_CHANGE: "Role change",
    Kind.EXFILTRATION: "Exfiltration",
    Kind.REMOTE_EXECUTION: "Remote code execution",
    Kind.UNTRUSTED_PACKAGE_INDEX: "Install from an unknown index",
    Kind.DISABLED_SAFEGUARD: "Disables a check or confirmation",
    Kind.PAYMENT_CHANGE: "Payment or recipient change",
    Kind.HIDDEN_CHARACTERS: "Hidden characters",
    Kind.ENCODED_BLOB: "Encoded blob",
    Kind.EXTERNAL_IMAGE: "External image",
    Kind.EXTERNAL_LINK: "External link",
    Kind.SECRET: "Secret",
    Kind.OBSERVATION_COPY: "Copies a tool observation",
    Kind.COPIED_INSTRUCTION: "An instruction copied from external content",
    Kind.UNAPPROVED_ACTION: "An action the bank never approved",
    Kind.ANOMALY: "Unlike the bank's approved items",
}


@dataclass(frozen=True)
class Finding:
    """One risk: its ``kind``, the ``excerpt`` it was found in (exact text of
    the scanned field, at most EXCERPT_MAX characters), and ``step``: the
    index of the trajectory step it came from, None for the item's own text."""

    kind: str
    excerpt: str
    step: int | None = None


def excerpt_of(text: str, match: re.Match) -> str:
    """The matched text, cut to EXCERPT_MAX characters (still an exact substring of ``text``)."""
    return text[match.start() : match.end()][:EXCERPT_MAX]


def find_all(text: str, kind: str, patterns: list[re.Pattern]) -> list[Finding]:
    """A finding of ``kind`` per distinct match of any of ``patterns`` in ``text``."""
    found = []
    for pattern in patterns:
        for match in pattern.finditer(text):
            found.append(Finding(kind, excerpt_of(text, match)))
    return found


def unique(findings: list[Finding]) -> list[Finding]:
    """``findings`` without repeats (same kind, excerpt and step), first seen first."""
    seen, out = set(), []
    for f in findings:
        key = (f.kind, f.excerpt, f.step)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
