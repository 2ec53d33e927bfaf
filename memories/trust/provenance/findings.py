"""What provenance says about risk findings (pure functions): an instruction
copied from external content is a finding of its own, and a word rule's hit on
a topic only (payments, what is sent where, a link), in the distiller's own
words or the user's task and naming no target the user did not give, is not."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from memories.trust.provenance.imperative import instruction_cues
from memories.trust.provenance.spans import AGENT, EXTERNAL, Span, sources_within
from memories.trust.provenance.text import normalize, sentences, tokens
from memories.trust.rules.findings import EXCERPT_MAX, Finding, Kind
from memories.trust.topics import COMMAND, TOPICS, URL

DETECTOR = "provenance-1"
# A sentence is copied when at least this share of its tokens comes from external content.
COPIED_SHARE = 0.5
# Word-rule kinds that may fire on a lesson that only talks about a topic ("call the vendor back before paying a
# new bank account"); the other kinds (injected instructions, role changes, disabled checks, remote execution,
# hidden characters, secrets) always stay findings.
TOPIC_KINDS = frozenset({Kind.PAYMENT_CHANGE, Kind.EXFILTRATION, Kind.EXTERNAL_LINK})
# What makes a hit concrete: something an agent would act on. The topic gate's commands and URLs, a tool or
# function name (http_post, os.environ), an IBAN, a wallet.
TARGETS = [
    *TOPICS[COMMAND],
    *TOPICS[URL],
    re.compile(r"\b[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)+\b|\b[a-z]\w*\.[a-z_]\w*\b"),
    re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){3,7}\b"),
    re.compile(r"\b(0x[0-9a-fA-F]{40}|bc1[a-z0-9]{25,60})\b"),
]
# Steps in the words of whoever the agent works for: the user's turns and the operator's system prompt.
PRINCIPAL_KINDS = ("user", "system")
_EDGE = "\"'`()[]<>{},;.!?"
_BOUNDARY = " \t\n\r\"'`()[]<>{}"


def _external_step(spans: list[Span], field: str, at: int) -> tuple[bool, int | None]:
    for span in spans:
        if span.field == field and span.source == EXTERNAL and span.start <= at < span.end:
            return True, span.step
    return False, None


def copied_instructions(values: dict[str, str], spans: list[Span]) -> list[Finding]:
    """A COPIED_INSTRUCTION finding per sentence of the item that is mostly
    copied from external content and tells its reader to do something in its
    copied part (the distiller's "Use when…" around a copied statement is no
    copied instruction); its step is the external step most of it came from."""
    found = []
    for field, text in values.items():
        for start, end in sentences(text):
            sentence = text[start:end]
            cues = [m for m in instruction_cues(sentence) if _external_step(spans, field, start + m.end() - 1)[0]]
            toks = tokens(sentence)
            if not cues or not toks:
                continue
            steps: Counter = Counter()
            for tok in toks:
                copied, step = _external_step(spans, field, start + tok.start)
                if copied:
                    steps[step] += 1
            if sum(steps.values()) >= COPIED_SHARE * len(toks):
                found.append(Finding(Kind.COPIED_INSTRUCTION, sentence[:EXCERPT_MAX], steps.most_common(1)[0][0]))
    return found


def concrete_targets(text: str) -> list[str]:
    """The commands, URLs, hosts, addresses, IBANs and wallets in ``text``, each as the whole word it sits in
    (up to spaces, quotes and brackets: the URL of a markdown link, not the link)."""
    out = []
    for pattern in TARGETS:
        for match in pattern.finditer(text):
            start, end = match.start(), match.end()
            while start > 0 and text[start - 1] not in _BOUNDARY:
                start -= 1
            while end < len(text) and text[end] not in _BOUNDARY:
                end += 1
            word = text[start:end].strip(_EDGE)
            if word and word not in out:
                out.append(word)
    return out


def _given_by_user(target: str, task: str) -> bool:
    return bool(task) and normalize(target) in normalize(task)


def topic_only(
    finding: Finding, values: dict[str, str], spans: list[Span], task: str, steps: Sequence[dict] = ()
) -> bool:
    """Whether a word rule's ``finding`` only marks a topic, so that it is not
    stored: its kind is one of TOPIC_KINDS, and either it was found in what
    the user (or the operator's system prompt) said in the source ``steps``,
    or its excerpt of the item's text lies wholly in the distiller's own words
    or the user's task (no copied or agent-written span in it) and every
    target it names (command, URL, host, address, IBAN, wallet) is one the
    user's ``task`` gave."""
    if finding.kind not in TOPIC_KINDS:
        return False
    if finding.step is not None:
        said = [s for s in steps if isinstance(s, dict) and s.get("index") == finding.step]
        return bool(said) and all(s.get("kind") in PRINCIPAL_KINDS for s in said)
    for field, text in values.items():
        at = text.find(finding.excerpt)
        if at < 0:
            continue
        if sources_within(spans, field, at, at + len(finding.excerpt)) & {EXTERNAL, AGENT}:
            return False
        return all(_given_by_user(t, task) for t in concrete_targets(finding.excerpt))
    return False
