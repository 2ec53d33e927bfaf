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
    re.compile(
        r"\b(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+|every\s+|of\s+)*"
        r"(safety|security|content|ethical|system|previous|prior|earlier|original)\s+"
        r"(guidelines|rules|instructions|policies|restrictions|filters|constraints)\b",
        _I,
    ),
    re.compile(
        r"\b(ignore|disregard|forget)\s+(all\s+|of\s+)?(the\s+)?(above|everything(\s+(above|before|else|you\s+were\s+told|"
        r"previously\s+said))?|prior\s+context|previous\s+context|what\s+you\s+were\s+told)\b",
        _I,
    ),
    re.compile(r"\byour\s+(new|real|actual|true)\s+(task|goal|objective|mission|instructions?)\s+(is|are)\b", _I),
    re.compile(r"(<\|im_start\|>|<\|im_end\|>|<\|system\|>|<\|endoftext\|>|\[/?INST\]|<</?SYS>>)", _I),
    re.compile(
        r"\b(print|reveal|output|repeat|show|leak|dump|disclose|include)\s+(me\s+)?(your|the)\s+"
        r"(full\s+|entire\s+|hidden\s+|original\s+)?(system\s+prompt|initial\s+instructions|hidden\s+instructions)\b",
        _I,
    ),
    re.compile(r"\b(respond|reply|answer|write)\s+only\s+in\s+(base64|hex|rot13|binary)\b", _I),
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
        r"\byou\s+are\s+now\s+(a|an|the|in|no\s+longer|free|dan|unrestricted|root|admin|administrator|"
        r"superuser|jailbroken|allowed|authori[sz]ed|permitted|operating\s+as|acting\s+as)\b",
        _I,
    ),
    re.compile(r"\bfrom\s+now\s+on,?\s+you\s+(are|will|must|shall|act|respond|obey)\b", _I),
    re.compile(
        r"\b(act|behave|respond|pose)\s+as\s+(an?\s+|the\s+)?(system\s+)?(unrestricted|unfiltered|jailbroken|root|"
        r"superuser|admin|administrator|developer\s+mode)\b",
        _I,
    ),
    re.compile(r"\byou\s+are\s+(now\s+)?(dan|jailbroken|unrestricted|unfiltered)\b", _I),
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
        r"two-factor(\s+(prompt|authentication|check))?|2-step\s+verification|authentication|captcha|guardrails|"
        r"linters?|hooks|code\s+review|review\s+step|approvals?|approval\s+step|sandbox|antivirus|firewall|assertions)\b",
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
    re.compile(
        r"\b[A-Z_]*(VERIFY|VERIFICATION|CHECKS?|MFA|2FA|AUTH|SSL|TLS|SECURITY|SAFETY|SANDBOX)[A-Z_]*\s*=\s*"
        r"['\"]?(false|0|off|no|disabled?)\b",
        _I,
    ),
]

# A rule's match right after one of these words is advice against the act ("never skip the tests").
_NEGATION = re.compile(
    r"(\b(never|not|no|avoid|avoiding|instead\s+of|rather\s+than|refuse\s+to)|n't)\s+(\w+\s+){0,2}$", _I
)


# …or a negation earlier in the same clause, carried over an "or"/"nor" ("never change the payee or send…").
_NEGATED_LIST = re.compile(r"(\b(never|not|no)|n't)\b[^.;:!?\n]{0,60}\b(or|nor)\s+$", _I)


def negated(text: str, match: re.Match) -> bool:
    """Whether the words just before ``match`` turn it into a warning against it."""
    before = text[max(0, match.start() - 80) : match.start()]
    return bool(_NEGATION.search(before[-30:]) or _NEGATED_LIST.search(before))


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
