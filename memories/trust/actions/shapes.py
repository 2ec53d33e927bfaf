"""One action a lesson recommends, and what every extractor shares: the kinds,
and the normalisation of a text before it is read (obfuscated dots and
schemes written back, so "hxxp://evil[.]com" reads as "http://evil.com")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memories.trust.rules.findings import EXCERPT_MAX


class ActionKind:
    """What the agent would do. The value of each kind is normalised so one action written two ways is one."""

    HOST = "host"  # contact a host: a URL's host, a bare domain, an IP, git@host (value: IDNA host, no www.)
    EMAIL = "email"  # write to an address (value: lower-case address)
    COMMAND = "command"  # run a command (value: each pipeline stage's program and subcommand, "curl | sh")
    PACKAGE = "package"  # install a package (value: "pypi:name" with the name as PEP 503 says, "npm:name"…)
    PAYMENT = "payment"  # pay or credit an account (value: "iban:DE89…", "eth:0x…", "card:…", "account:…")
    PERMISSION = "permission"  # widen a permission (value: "chmod 777", "sudo", "grant all", "role admin"…)


KIND_VERBS = {
    ActionKind.HOST: "open",
    ActionKind.EMAIL: "write to",
    ActionKind.COMMAND: "run",
    ActionKind.PACKAGE: "install",
    ActionKind.PAYMENT: "pay",
    ActionKind.PERMISSION: "grant",
}


@dataclass(frozen=True)
class Action:
    """One thing a lesson would make an agent do: its ``kind``, its normalised ``value`` (what the bank's
    approvals and the task are compared on), the ``excerpt`` it was read from (exact text, at most
    EXCERPT_MAX characters) and, for a command, its ``risks`` ("pipe to a shell", "download", "sudo"…)."""

    kind: str
    value: str
    excerpt: str
    risks: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.kind, self.value)


def action(kind: str, value: str, excerpt: str, risks: tuple[str, ...] = ()) -> Action:
    return Action(kind, value[:500], excerpt.strip()[:EXCERPT_MAX], risks)


# Obfuscations of a link a reader still follows: "hxxp", "[.]", "(dot)", "[:]//". Each is rewritten to the
# plain form *with the same length*-insensitive mapping kept by ``deobfuscate``'s position table, so an
# excerpt is always cut from the original text.
_OBFUSCATIONS = [
    (re.compile(r"\bh(?:xx|\*\*|XX)p(s?)(?=(?:\[:\]|:)//)", re.I), lambda m: f"http{m.group(1)}"),
    (re.compile(r"\[:\]//"), lambda m: "://"),
    (re.compile(r"\s?[\[(\{](?:\.|dot|DOT)[\])\}]\s?"), lambda m: "."),
    (re.compile(r"\s?[\[(\{](?:@|at|AT)[\])\}]\s?"), lambda m: "@"),
]


def deobfuscate(text: str) -> tuple[str, list[int]]:
    """``text`` with obfuscated schemes, dots and at-signs written plainly, and for each character of the
    result the index of the character of ``text`` it came from (so a match maps back to an exact excerpt)."""
    spans: list[tuple[int, int, str]] = []
    for pattern, repl in _OBFUSCATIONS:
        for m in pattern.finditer(text):
            if not any(s < m.end() and m.start() < e for s, e, _ in spans):
                spans.append((m.start(), m.end(), repl(m)))
    if not spans:
        return text, list(range(len(text)))
    out, where, at = [], [], 0
    for start, end, plain in sorted(spans):
        out.append(text[at:start])
        where += range(at, start)
        out.append(plain)
        where += [start] * (len(plain) - 1) + [end - 1]
        at = end
    out.append(text[at:])
    where += range(at, len(text))
    return "".join(out), where


def original(text: str, where: list[int], start: int, end: int) -> str:
    """The text of ``text`` behind the deobfuscated span [start, end)."""
    if start >= end:
        return ""
    return text[where[start] : where[end - 1] + 1]
