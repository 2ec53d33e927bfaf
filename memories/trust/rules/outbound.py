"""Rules for what leaves: secrets, files or the conversation sent to a URL,
an address or a host, or handed to a tool as its body (exfiltration), and
payments, payouts or recipients changed."""

from __future__ import annotations

import re

from memories.trust.rules.findings import EXCERPT_MAX, Finding, Kind, excerpt_of
from memories.trust.rules.instructions import negated

_I = re.IGNORECASE

_SEND = (
    r"(send|sends|sending|post|posts|upload|uploads|forward|forwards|e-?mail|mail|transmit|exfiltrate|leak|share|"
    r"submit|copy|push|pipe|beacon|include|attach|append|report|curl|wget|scp|rsync|nc|netcat|dump|sync)"
)
_SENSITIVE = (
    r"(secrets?|credentials?|passwords?|passwd|passphrases?|api[\s_-]?keys?|access[\s_-]?keys?|tokens?|"
    r"private[\s_-]?keys?|ssh[\s_-]?keys?|id_rsa|id_ed25519|\.env\b|\.aws|\.ssh|\.netrc|cookies?|session\s+ids?|"
    r"conversation|chat\s+(history|log)|transcript|system\s+prompt|environment\s+variables|env\s+vars|"
    r"/etc/passwd|/etc/shadow|files?|documents?|contents?\s+of|customer\s+data|personal\s+data|database\s+dump|"
    r"the\s+user'?s?\s+(data|messages|history))"
)
# A destination written out: a URL, an e-mail address, an IP address or a host name.
_DESTINATION = re.compile(
    r"(https?://[^\s)>\]\"']+|(s3|gs|sftp|ftp|smb|az)://\S+|\b[\w.+-]+@[\w-]+(\.[\w-]+)+\b|\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b|"
    r"\b[a-z0-9][a-z0-9-]*(\.[a-z0-9-]+)*\.(com|net|org|io|xyz|ru|cn|top|info|biz|co|me|site|online|dev|app|tk|cc|sh|ly)\b"
    r"|webhook|pastebin|ngrok)",
    _I,
)
_SEND_RE = re.compile(rf"\b{_SEND}\b", _I)
_SENSITIVE_RE = re.compile(rf"{_SENSITIVE}", _I)
# One sentence or line: a send, a sensitive object and a destination together.
_SENTENCE = re.compile(r"[^.!?\n]*(?:[.!?](?=\S)[^.!?\n]*)*[.!?\n]?")
_SAFE_HOSTS = re.compile(r"(localhost|127\.0\.0\.1|example\.(com|org|net))", _I)

PAYMENT = [
    re.compile(
        r"\b(change|changes|changed|update|updated|replace|replaced|switch|set|redirect|reroute)\s+"
        r"(the\s+|their\s+|its\s+|a\s+|our\s+)?([\w-]+['’]s?\s+)?(new\s+)?(payee|recipient|beneficiary|bank\s+account|"
        r"account\s+number|iban|routing\s+number|sort\s+code|wallet(\s+address)?|"
        r"(payment|payout|deposit|destination|receiving|settlement|remittance|wire)\s+"
        r"(details|address|destination|account|instructions)|payout|direct\s+deposit)\b",
        _I,
    ),
    re.compile(
        r"\b(send|wire|transfer|pay|route|redirect)\s+(all\s+)?(the\s+)?(funds|payments?|money|invoices?|refunds?|"
        r"\$[\d,.]+|[\d,.]+\s*(usd|eur|gbp|btc|eth))\s+(to|into)\s+",
        _I,
    ),
    re.compile(
        r"\bnew\s+(payee|beneficiary|bank\s+account|iban|wallet\s+address|payment\s+details|wire\s+details|"
        r"account\s+(number|details))\b",
        _I,
    ),
    re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){3,7}\b"),  # an IBAN
    re.compile(r"\b(0x[0-9a-fA-F]{40}|bc1[a-z0-9]{25,60})\b"),  # a crypto wallet
]


# Secrets handed to a tool as its body or arguments: no address written out, the tool is the way out.
_BULK_SECRETS = (
    r"(environment\s+variables|env\s+vars|os\.environ|process\.env|printenv|\.env\s+file|(the\s+|all\s+)*secrets|"
    r"(the\s+|all\s+)*credentials|(the\s+|all\s+)*(api\s+keys|tokens|passwords)|private\s+keys?|ssh\s+keys?|"
    r"id_rsa|~/\.aws/credentials)"
)
TOOL_BODY = re.compile(
    rf"\b(call|calls|invoke|use|run|send|post|pass|put|include|attach|add)\b[^.;\n]{{0,80}}?(?<!\w){_BULK_SECRETS}"
    r"[^.;\n]{0,40}?\b(as|in|into|inside)\s+(the\s+|its\s+|a\s+|their\s+)?([\w-]+\s+)?"
    r"(body|payload|arguments?|args|params|parameters|query\s+string|form\s+data)\b",
    _I,
)


def _exfiltration(text: str) -> list[Finding]:
    found = []
    for sentence in _SENTENCE.finditer(text):
        part = sentence.group(0)
        send = _SEND_RE.search(part)
        if not send or negated(part, send):
            continue
        sensitive = _SENSITIVE_RE.search(part)
        destinations = [d for d in _DESTINATION.finditer(part) if not _SAFE_HOSTS.fullmatch(d.group(0))]
        if sensitive and destinations:
            excerpt = part.strip()[:EXCERPT_MAX]
            if excerpt:
                found.append(Finding(Kind.EXFILTRATION, excerpt))
    return found


def scan(text: str) -> list[Finding]:
    """Exfiltration and payment or recipient changes in ``text``."""
    found = _exfiltration(text)
    found += [
        Finding(Kind.EXFILTRATION, excerpt_of(text, m).strip())
        for m in TOOL_BODY.finditer(text)
        if not negated(text, m)
    ]
    for pattern in PAYMENT:
        for match in pattern.finditer(text):
            if not negated(text, match):
                found.append(Finding(Kind.PAYMENT_CHANGE, excerpt_of(text, match).strip()))
    return found
