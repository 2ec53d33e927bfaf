"""Rules for text that talks to the agent instead of teaching it: injected
instructions, role changes, and advice to switch off checks, tests or
confirmations."""

from __future__ import annotations

import re

from memories.trust.rules.findings import Finding, Kind, excerpt_of

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
    # The same in French, German and Spanish: forget or ignore the (previous) instructions.
    re.compile(
        r"\b(oublie[zr]?|ignore[zr]?|ne\s+tenez\s+(plus\s+)?compte\s+d[eu]s?|faites\s+abstraction\s+d[eu]s?)\s+"
        r"(toutes\s+|tous\s+)?(les\s+|vos\s+|tes\s+|ces\s+)?(consignes|instructions|règles|directives|indications|ordres)\b",
        _I,
    ),
    re.compile(
        r"\b(vergiss|vergessen\s+sie|ignoriere|ignorieren\s+sie|missachte|missachten\s+sie)\s+"
        r"(alle\s+|die\s+|deine\s+|ihre\s+)*(vorherigen\s+|bisherigen\s+|obigen\s+|früheren\s+)?"
        r"(anweisungen|instruktionen|regeln|vorgaben|richtlinien|befehle)\b",
        _I,
    ),
    re.compile(
        r"\b(olvida|olvide|olvidad|olviden|ignora|ignore|ignorad|ignoren)\s+(todas\s+)?(las\s+|tus\s+|sus\s+|estas\s+)?"
        r"(instrucciones|reglas|indicaciones|directrices|normas|órdenes)\b",
        _I,
    ),
]

# Jailbreak personas by name (not a possessive: "act as Dan's backup" is a colleague), or an unbound assistant.
_PERSONA = (
    r"(an?\s+|the\s+)?(DAN|STAN|Better\s*DAN|Anti-?GPT|Evil-?Bot|Mongo\s+Tom|UCAR|Developer\s+Mode|Do\s+Anything\s+Now|"
    r"(unrestricted|unfiltered|uncensored|jailbroken)\s+(ai|assistant|model|chatbot|version)|"
    r"(ai|assistant|model|chatbot)\s+(without|with\s+no)\s+(any\s+)?(restrictions|rules|filters|limits|ethics|censorship))"
    r"\b(?!['’]s)"
)

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
    # Named jailbreak personas, and an assistant "without rules", taken on.
    re.compile(rf"\b(act|acting|behave|respond|answer|reply|pose|role-?play|speak)\s+(as|like)\s+{_PERSONA}", _I),
    re.compile(rf"\b(pretend|imagine)\s+(to\s+be|you\s+are|that\s+you\s+are|you're)\s+{_PERSONA}", _I),
    re.compile(rf"\b(you\s+are|you're|become|becoming|stay\s+in\s+character\s+as)\s+(now\s+)?{_PERSONA}", _I),
    re.compile(r"\bdo\s+anything\s+now\b", _I),
    # French, German and Spanish: "you are now the administrator", "from now on you…".
    re.compile(
        r"\b(vous\s+êtes|tu\s+es)\s+(désormais|maintenant|dorénavant|à\s+présent)\s+(l['’]\s*|le\s+|la\s+|un\s+|une\s+)?"
        r"(administrat(eur|rice)|admin|root|superutilisateur|développeur|système|libre|sans\s+restrictions?)",
        _I,
    ),
    re.compile(
        r"\b(à\s+partir\s+de\s+maintenant|désormais|dorénavant),?\s+(vous\s+êtes|tu\s+es|vous\s+devez|tu\s+dois|"
        r"vous\s+agissez|tu\s+agis)\b",
        _I,
    ),
    re.compile(
        r"\b(du\s+bist|sie\s+sind)\s+(jetzt|nun|ab\s+sofort|ab\s+jetzt)\s+(der\s+|die\s+|ein\s+|eine\s+)?"
        r"(administrator(in)?|admin|root|superuser|entwickler|system|uneingeschränkt|frei)",
        _I,
    ),
    re.compile(r"\b(ab\s+(jetzt|sofort)|von\s+nun\s+an),?\s+(bist\s+du|sind\s+sie|handelst\s+du|musst\s+du)\b", _I),
    re.compile(
        r"\b(ahora\s+eres|eres\s+ahora|ahora\s+es\s+usted|usted\s+es\s+ahora)\s+(el\s+|la\s+|un\s+|una\s+)?"
        r"(administrador(a)?|admin|root|superusuario|desarrollador|libre|sin\s+restricciones)",
        _I,
    ),
    re.compile(r"\b(a\s+partir\s+de\s+ahora|desde\s+ahora),?\s+(eres|serás|actúas|actúa|debes|usted\s+es)\b", _I),
]

DISABLED_SAFEGUARD = [
    # Skipping the out-of-band check (a call back on the number on file) that catches a forged request.
    re.compile(
        r"\bwithout\s+(first\s+)?(calling|phoning|ringing|contacting|checking\s+with|confirming\s+with|verifying\s+with)\s+"
        r"(\w+\s+){0,3}?(back|by\s+phone|on\s+the\s+(phone|number\s+on\s+file))\b",
        _I,
    ),
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


# …or, for a "without …" match, a negation anywhere earlier in its clause ("never pay X without calling back").
_NEGATED_CLAUSE = re.compile(r"(\b(never|not|no)|n't)\b[^.;:!?,\n]{0,80}$", _I)


def negated(text: str, match: re.Match) -> bool:
    """Whether the words just before ``match`` turn it into a warning against it."""
    before = text[max(0, match.start() - 80) : match.start()]
    if match.group(0).lower().startswith("without") and _NEGATED_CLAUSE.search(before):
        return True
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
