"""Rules for text that talks to the agent instead of teaching it: injected
instructions, role changes, and advice to switch off checks, tests or
confirmations."""

from __future__ import annotations

import re

from memories.risks.findings import Finding, Kind, excerpt_of

_I = re.IGNORECASE

INJECTED = [
    re.compile(
        r"\b(ignore|disregard|forget|override|overrule|discard|bypass)\s+(all\s+|any\s+|the\s+|your\s+|every\s+)*"
        r"(previous|prior|above|earlier|preceding|original|system|existing|other)?\s*"
        r"(instructions?|prompts?|rules|directions|guidelines|directives|system\s+prompt|guardrails|policies)\b",
        _I,
    ),
    re.compile(r"\bnew\s+(system\s+)?(instructions?|directives?|orders)\s*:", _I),
    re.compile(r"(\[|<)\s*/?\s*(system|admin|developer)(\s+(prompt|message|override|note))?\s*(\]|>)", _I),
    re.compile(r"\b(system|admin|developer)\s+(prompt|message|override|instructions?)\s*:", _I),
    re.compile(
        r"\b(note|message|instructions?|attention|important)\s+(to|for)\s+(all\s+)?(ai|llm|assistants?|agents?|models?|bots?)\b",
        _I,
    ),
    re.compile(r"\bif\s+you\s+are\s+an?\s+(ai|llm|language\s+model|assistant|agent|autonomous\s+agent)\b", _I),
    re.compile(r"\b(do\s+not|don't|never)\s+(tell|inform|mention\s+(this|it)\s+to|alert|notify)\s+the\s+user\b", _I),
    re.compile(r"\bwithout\s+(telling|informing|notifying|alerting)\s+the\s+user\b", _I),
]

ROLE_CHANGE = [
    re.compile(
        r"\byou\s+are\s+now\s+(a|an|the|in|my|no\s+longer|free|dan|unrestricted|root|admin|administrator|"
        r"superuser|jailbroken|allowed|authori[sz]ed|permitted|operating\s+as|acting\s+as)\b",
        _I,
    ),
    re.compile(r"\bfrom\s+now\s+on,?\s+you\s+(are|will|must|shall|act|respond|obey)\b", _I),
    re.compile(
        r"\b(act|behave|respond)\s+as\s+(an?\s+)?(unrestricted|unfiltered|jailbroken|root|superuser|admin)\b", _I
    ),
    re.compile(r"\bpretend\s+(to\s+be|you\s+are)\s+(an?\s+)?(different|unrestricted|system|admin|developer)", _I),
    re.compile(
        r"\b(enter|enable|switch\s+to|activate)\s+(developer|admin|god|jailbreak|dan|unrestricted)\s+mode\b", _I
    ),
    re.compile(r"\byour\s+(new|real|true)\s+(role|identity|purpose|instructions)\s+(is|are)\b", _I),
]

DISABLED_SAFEGUARD = [
    re.compile(
        r"\b(disable|turn\s+off|switch\s+off|skip|bypass|deactivate|circumvent|suppress|ignore|silence|comment\s+out)\s+"
        r"(all\s+|the\s+|any\s+|every\s+|its\s+|their\s+)*"
        r"(security\s+|safety\s+|ssl\s+|tls\s+|certificate\s+|signature\s+|unit\s+|integration\s+|failing\s+|pre-commit\s+|ci\s+)*"
        r"(checks?|tests?|verification|validation|confirmations?|confirmation\s+prompts?|warnings?|2fa|mfa|"
        r"linters?|hooks|code\s+review|approvals?|sandbox|antivirus|firewall|assertions)\b",
        _I,
    ),
    re.compile(
        r"(--no-verify|--insecure|--disable-ssl|verify\s*=\s*False|NODE_TLS_REJECT_UNAUTHORIZED\s*=\s*['\"]?0|"
        r"PYTHONHTTPSVERIFY\s*=\s*['\"]?0|--trust-all|StrictHostKeyChecking\s*=?\s*no|set\s+-o\s+nosafety)",
        _I,
    ),
    re.compile(
        r"\b(do\s+not|don't|never|no\s+need\s+to)\s+(ask|wait|check|prompt)\s+(the\s+user\s+)?(for\s+)?"
        r"(confirmation|approval|permission|consent|the\s+user)\b",
        _I,
    ),
    re.compile(
        r"\bwithout\s+(asking|waiting)\s+(the\s+user\s+)?(for\s+)?(confirmation|approval|permission|consent)\b", _I
    ),
    re.compile(r"\bwithout\s+(any\s+)?(user\s+)?(confirmation|approval|consent|review)\b", _I),
    re.compile(r"\bauto-?(approve|confirm)\s+(all|every|any)\b", _I),
]

# A rule's match right after one of these words is advice against the act ("never skip the tests").
_NEGATION = re.compile(
    r"(\b(never|not|no|avoid|avoiding|instead\s+of|rather\s+than|refuse\s+to)|n't)\s+(\w+\s+){0,2}$", _I
)


def negated(text: str, match: re.Match) -> bool:
    """Whether the words just before ``match`` turn it into a warning against it."""
    return bool(_NEGATION.search(text[max(0, match.start() - 30) : match.start()]))


def scan(text: str) -> list[Finding]:
    """Injected instructions, role changes and disabled safeguards in ``text``."""
    found = []
    for kind, patterns, guard in (
        (Kind.INJECTED_INSTRUCTION, INJECTED, False),
        (Kind.ROLE_CHANGE, ROLE_CHANGE, False),
        (Kind.DISABLED_SAFEGUARD, DISABLED_SAFEGUARD, True),
    ):
        for pattern in patterns:
            for match in pattern.finditer(text):
                if guard and negated(text, match):
                    continue
                found.append(Finding(kind, excerpt_of(text, match).strip()))
    return found
