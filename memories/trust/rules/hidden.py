"""Rules for what a reviewer cannot read at a glance: invisible characters,
long encoded blobs, markdown images and links to outside hosts, and secrets
written into the text."""

from __future__ import annotations

import re

from memories.trust.rules.findings import Finding, Kind, excerpt_of

_I = re.IGNORECASE

# Zero-width and bidirectional controls, word joiners, the BOM, and the Unicode tag block (invisible ASCII).
INVISIBLE = re.compile(
    r".{0,20}[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]+.{0,20}"
)

BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{64,}={0,2}(?![A-Za-z0-9+/=])")
BASE64URL = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{80,}(?![A-Za-z0-9_-])")
HEX = re.compile(r"(?<![0-9a-fA-F])(0x)?[0-9a-fA-F]{80,}(?![0-9a-fA-F])")

EXTERNAL_IMAGE = [
    re.compile(r"!\[[^\]\n]*\]\(\s*<?(https?:)?//[^)\s]+[^)]*\)", _I),
    re.compile(r"<img\b[^>]*\bsrc\s*=\s*[\"']?(https?:)?//[^\s\"'>]+[^>]*>", _I),
]
EXTERNAL_LINK = [
    re.compile(r"(?<!!)\[[^\]\n]+\]\(\s*<?(https?:)?//[^)\s]+[^)]*\)", _I),
    re.compile(r"<a\b[^>]*\bhref\s*=\s*[\"']?(https?:)?//[^\s\"'>]+[^>]*>", _I),
]

SECRETS = [
    re.compile(r"\bsk-(proj-|ant-|live-)?[A-Za-z0-9_-]{20,}"),
    re.compile(r"\b(sk|rk|pk)_(live|test)_[A-Za-z0-9]{16,}"),
    re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),  # a JWT
    re.compile(r"-----BEGIN ([A-Z]+ )?PRIVATE KEY-----"),
    re.compile(
        r"\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\s*[:=]\s*[\"']?"
        r"(?=[^\s\"']*[0-9!@#$%^&*])[^\s\"'<>{}]{8,}",
        _I,
    ),
]


def _blob(match: re.Match) -> bool:
    """A long run of base64 that mixes cases and digits (not a long word or a path)."""
    text = match.group(0)
    return any(c.isdigit() for c in text) and any(c.isupper() for c in text) and any(c.islower() for c in text)


def scan(text: str) -> list[Finding]:
    """Hidden characters, encoded blobs, external images and links, and secrets in ``text``."""
    found = [Finding(Kind.HIDDEN_CHARACTERS, excerpt_of(text, m)) for m in INVISIBLE.finditer(text)]
    found += [Finding(Kind.ENCODED_BLOB, excerpt_of(text, m)) for m in BASE64.finditer(text) if _blob(m)]
    found += [
        Finding(Kind.ENCODED_BLOB, excerpt_of(text, m))
        for m in BASE64URL.finditer(text)
        if _blob(m) and ("-" in m.group(0) or "_" in m.group(0))  # else BASE64 found it
    ]
    found += [Finding(Kind.ENCODED_BLOB, excerpt_of(text, m)) for m in HEX.finditer(text)]
    for kind, patterns in (
        (Kind.EXTERNAL_IMAGE, EXTERNAL_IMAGE),
        (Kind.EXTERNAL_LINK, EXTERNAL_LINK),
        (Kind.SECRET, SECRETS),
    ):
        for pattern in patterns:
            found += [Finding(kind, excerpt_of(text, m)) for m in pattern.finditer(text)]
    return found
