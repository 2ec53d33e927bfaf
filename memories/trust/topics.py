"""The auto-approval topic gate: whether an item's text recommends something
only a human should let through, whatever the attack rules say — a command
or code, a URL or domain, a package index, a payment, a credential, or a
change of role, permission or instructions (keywords in English, French,
German and Spanish). Deliberately broad: a false positive costs one human
look, a miss serves a lesson nobody read. It makes no risk finding (an item
on these topics is often honest); it only keeps the item for a human."""

from __future__ import annotations

import re

_I = re.IGNORECASE

COMMAND = "a command or code"
URL = "a URL"
PACKAGE_INDEX = "a package index"
PAYMENT = "payments or bank details"
CREDENTIAL = "credentials or secrets"
ROLE = "a role, permission or instruction change"

_TLDS = (
    "com|net|org|io|xyz|ru|cn|top|info|biz|co|me|site|online|dev|app|tk|cc|sh|ly|ai|gov|edu|uk|de|fr|es|eu|us|ca|"
    "au|jp|in|br|it|nl|pl|ch|se|no|cloud|tech|store|shop|link|click|page|host|local|internal|corp|lan|onion"
)

TOPICS: dict[str, list[re.Pattern]] = {
    COMMAND: [
        re.compile(r"`[^`\n]+`|```"),  # a code span or block
        re.compile(r"^\s*\$\s+\S", re.MULTILINE),  # a shell prompt
        re.compile(r"(?<=\s)--?[a-z][\w-]*\b", _I),  # a command-line option (-mtime, --no-verify)
        re.compile(r"\|\s*(sudo|(ba|z|da|k)?sh|python3?|perl|ruby|node|php|xargs|tee|iex|base64|eval)\b", _I),
        re.compile(
            r"\b(sudo|curl|wget|bash|zsh|sh\s+-c|powershell|pwsh|cmd\.exe|chmod|chown|rm\s+-\w+|dd\s+if=|mkfs|ssh|scp|"
            r"rsync|netcat|nc\s+-\w+|eval|exec|base64|xxd|openssl|pip3?|pipx|uv\s+(pip|add|run)|npm|npx|yarn|pnpm|"
            r"cargo|apt(-get)?|brew|yum|dnf|docker|podman|kubectl|systemctl|crontab|iex|invoke-\w+|git\s+\w+)\b",
            _I,
        ),
        re.compile(r"\b(export\s+)?[A-Z][A-Z0-9_]{2,}=\S"),  # an environment assignment
        re.compile(r"\b[A-Za-z_]\w*[._]\w+\(|\b\w+\(\)"),  # a call: os.system(…), http_post(…), run()
        re.compile(r"(~|\$HOME)/\S+|(?<![\w/])/(etc|usr|bin|var|root|home|dev|proc)/\S*"),  # a path to run or read
    ],
    URL: [
        re.compile(r"\b[a-z][a-z0-9+.-]{1,15}://", _I),
        re.compile(r"\bwww\.", _I),
        re.compile(rf"\b[a-z0-9][a-z0-9-]*(\.[a-z0-9-]+)*\.({_TLDS})\b(?![.\w-]*\()", _I),
        re.compile(r"\b\d{1,3}(\.\d{1,3}){3}\b|\blocalhost\b", _I),
        re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+"),
    ],
    PACKAGE_INDEX: [
        re.compile(
            r"(index[-_ ]url|extra[-_ ]index|find[-_ ]links|trusted[-_ ]host|\bregistry|\bpackage\s+(index|mirror|"
            r"repository|source|feed)|\bpypi|\bnpmjs|\bmirror|\bartifactory|\bnexus\b|\bverdaccio|\bdevpi|"
            r"\bconda\s+channel|\bgem\s+sources?|\bGOPROXY|\bPIP_\w+|\bUV_\w+|\bnpm_config_\w+|\.npmrc|pip\.conf)",
            _I,
        ),
    ],
    PAYMENT: [
        re.compile(
            r"\b(pay|pays|paid|paying|payments?|payouts?|payee|payer|payable|invoices?|billing|refunds?|wire(d|s)?|"
            r"funds|money\s+transfers?|bank\s+(account|details|transfer)s?|account\s+numbers?|iban|swift|bic|"
            r"routing\s+numbers?|sort\s+codes?|beneficiar(y|ies)|remittance|wallets?|crypto\w*|bitcoin|btc|eth|usdt|"
            r"credit\s+cards?|card\s+numbers?|cvv|direct\s+deposit|deposit\s+account|paiements?|virements?|rib|"
            r"zahlung(en)?|überweisung(en)?|bankverbindung|kontonummer|pagos?|transferencias?|cuenta\s+bancaria)\b",
            _I,
        ),
        re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){3,7}\b"),  # an IBAN
    ],
    CREDENTIAL: [
        re.compile(
            r"\b(passwords?|passphrases?|passcodes?|pin\s+codes?|credentials?|secrets?|tokens?|api[\s_-]?keys?|"
            r"access[\s_-]?keys?|private[\s_-]?keys?|ssh[\s_-]?keys?|oauth|bearer|cookies?|session\s+(ids?|tokens?)|"
            r"env(ironment)?\s+var(iable)?s?|os\.environ|process\.env|printenv|2fa|mfa|otp|"
            r"one-time\s+(codes?|passwords?)|recovery\s+codes?|login\s+details|authori[sz]ation\s+headers?|"
            r"mots?\s+de\s+passe|identifiants|passwort|passwörter|kennwort|zugangsdaten|contraseñas?|credenciales)\b",
            _I,
        ),
        re.compile(r"(?<![\w.])\.env\b|\bid_(rsa|ed25519)\b|\.(ssh|aws|netrc)\b"),
    ],
    ROLE: [
        re.compile(
            r"\b(roles?|personas?|permissions?|privileges?|admin(istrator)?s?|root\s+(access|user|account|shell|rights)|"
            r"as\s+root|superuser|owner\s+rights|"
            r"access\s+rights|act(ing)?\s+as|pretend\w*|impersonat\w+|you\s+are\s+(now|no\s+longer)|from\s+now\s+on|"
            r"instructions?|system\s+prompt|guidelines|jailbreak\w*|developer\s+mode|grant\s+(yourself|"
            r"access|rights)|escalat\w+|consignes?|rôles?|administrat(eur|rice)s?|droits|privilèges?|"
            r"vous\s+êtes|tu\s+es|oublie[zr]?|faites\s+semblant|fais\s+semblant|en\s+tant\s+qu|anweisungen|"
            r"instruktionen|vorgaben|rollen?|berechtigung(en)?|rechte|du\s+bist|sie\s+sind\s+(jetzt|nun)|vergiss|"
            r"vergessen\s+sie|tu\s+so\s+als|instrucciones|indicaciones|directrices|rol|papel|administrador(a|es)?|"
            r"permisos|privilegios|ahora\s+eres|eres\s+ahora|olvida|olvide|finge|actúa\s+como)\b",
            _I,
        ),
    ],
}


def sensitive_topics(text: str) -> list[str]:
    """The topics of TOPICS that ``text`` touches, in TOPICS' order (empty: none)."""
    text = text or ""
    return [topic for topic, patterns in TOPICS.items() if any(p.search(text) for p in patterns)]


def held_back_reason(topics: list[str]) -> str:
    """What a reviewer reads on an item the gate kept: "Auto-approval skipped: recommends a URL and …"."""
    if not topics:
        return ""
    named = topics[0] if len(topics) == 1 else f"{', '.join(topics[:-1])} and {topics[-1]}"
    return f"{HELD_BACK} recommends {named}."


# The start of every reason the gate writes (the trust page lists the items whose flag starts so).
HELD_BACK = "Auto-approval skipped:"
