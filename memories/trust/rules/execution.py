"""Rules for code fetched and run: a download (or a decoded payload) piped
into a shell or an interpreter, and packages installed from an index other
than the official one, whether set by an option, a config line or an
environment variable."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from memories.trust.rules.findings import Finding, Kind, excerpt_of

_I = re.IGNORECASE

REMOTE_EXECUTION = [
    re.compile(
        r"\b(curl|wget|iwr|invoke-webrequest|fetch)\b[^\n|;]{0,200}\|\s*(sudo\s+)?(-\w+\s+)*"
        r"((ba|z|da|k|fi)?sh|python3?|perl|ruby|node|php|iex|powershell|pwsh)\b",
        _I,
    ),
    re.compile(r"\b(ba|z)?sh\s+(-c\s+)?[\"']?(<\(|\$\()\s*(curl|wget)\b", _I),
    re.compile(
        r"\b(curl|wget)\b[^\n]{0,200}?(&&|;)\s*(sudo\s+)?(chmod\s+\+x\s+\S+\s*(&&|;)\s*)?"
        r"((ba|z)?sh\s+\S+|python3?\s+\S+|\./\S+)",
        _I,
    ),
    re.compile(r"\b(eval|exec|source)\s*[(\s]\s*[\"']?(\$\(|<\(|`)?\s*(curl|wget|requests\.get|urllib|urlopen)", _I),
    re.compile(r"\b(powershell|pwsh)\b[^\n]{0,40}\s-(e|enc|encodedcommand)\s+[A-Za-z0-9+/=]{16,}", _I),
    re.compile(r"\biex\s*\(\s*(new-object\s+net\.webclient|iwr|invoke-webrequest)", _I),
    re.compile(r"\bexec\s*\(\s*(base64|codecs|bytes\.fromhex|__import__)", _I),
]

# Text decoded (base64, hex, gzip…) and then run: the payload hides what it does from a reviewer.
_DECODE = (
    r"(base(64|32)\s+(-\w*d\w*|--decode)|xxd\s+(-\w+\s+)*-r|openssl\s+(base64|enc)\b[^|\n]{0,60}?\s-d|"
    r"gunzip|zcat|gzip\s+-d|uudecode)\b"
)
_RUNNER = r"(sudo\s+)?(-\w+\s+)*((ba|z|da|k|fi)?sh|python3?|perl|ruby|node|php|iex|powershell|pwsh|source|eval)\b"
DECODED_EXECUTION = [
    re.compile(rf"\b{_DECODE}[^\n;]{{0,100}}?\|\s*{_RUNNER}", _I),
    re.compile(rf"\b((ba|z)?sh\s+-c|eval|exec|source|iex)\s*[(\s]\s*[\"']?(\$\(|<\(|`)[^)`\n]{{0,200}}?{_DECODE}", _I),
]

# The package indexes a lesson may point at without a finding.
OFFICIAL_HOSTS = {
    "pypi.org",
    "pypi.python.org",
    "files.pythonhosted.org",
    "test.pypi.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "rubygems.org",
    "crates.io",
    "proxy.golang.org",
    "repo.maven.apache.org",
    "repo1.maven.org",
}

INDEX_OPTIONS = [
    re.compile(
        r"\b(pip3?|uv\s+pip|python3?\s+-m\s+pip|poetry|pipenv|easy_install)\b[^\n]{0,200}?"
        r"(--index-url|--extra-index-url|-i|--find-links|-f|--trusted-host)[=\s]+(?P<url>\S+)",
        _I,
    ),
    re.compile(r"\b(npm|yarn|pnpm|bun)\b[^\n]{0,200}?--registry[=\s]+(?P<url>\S+)", _I),
    re.compile(r"\b(npm|yarn|pnpm)\s+config\s+set\s+registry[=\s]+(?P<url>\S+)", _I),
    re.compile(r"\bpip3?\s+config\s+set\s+global\.(extra-)?index-url[=\s]+(?P<url>\S+)", _I),
    re.compile(r"\bgem\s+(install|sources\s+(-a|--add))\b[^\n]{0,200}?(--source|-s|-a|--add)[=\s]+(?P<url>\S+)", _I),
    re.compile(
        r"\b(pip3?|uv\s+pip|npm|yarn|pnpm|gem|cargo)\s+(install|add|i)\s+[^\n]{0,100}?(?P<url>(git\+)?https?://\S+)", _I
    ),
    # The same settings as environment variables or config-file lines (PIP_INDEX_URL=…, index-url = …), or in words
    # (set PIP_EXTRA_INDEX_URL to http://…).
    re.compile(
        r"\b(PIP_(EXTRA_)?INDEX_URL|PIP_FIND_LINKS|PIP_TRUSTED_HOST|UV_(EXTRA_|DEFAULT_)?INDEX(_URL)?|UV_FIND_LINKS|"
        r"PIPENV_PYPI_MIRROR|POETRY_REPOSITORIES_\w+?_URL|npm_config_registry|YARN_(NPM_)?REGISTRY(_SERVER)?|"
        r"CARGO_REGISTRIES_\w+?_INDEX|BUNDLE_MIRROR__\w+|(extra-)?index-url|registry)(\s*[=:]\s*|\s+(to|at)\s+)[\"']?"
        r"(?P<url>[a-z+]+://[^\s\"',;]+|[\w-]+(\.[\w-]+)+(:\d+)?(/[^\s\"',;]*)?)",
        _I,
    ),
]


def _trusted(url: str) -> bool:
    """An official index reached over HTTPS (plain http lets anyone on the path swap the packages)."""
    return _host(url) in OFFICIAL_HOSTS and not url.strip("\"'`(),;").lower().startswith("http://")


def _host(url: str) -> str:
    url = url.strip("\"'`(),;")
    if "://" not in url:
        url = "https://" + url
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def scan(text: str) -> list[Finding]:
    """Remote code execution and installs from an unknown index in ``text``."""
    found = []
    for pattern in REMOTE_EXECUTION + DECODED_EXECUTION:
        for match in pattern.finditer(text):
            found.append(Finding(Kind.REMOTE_EXECUTION, excerpt_of(text, match).strip()))
    for pattern in INDEX_OPTIONS:
        for match in pattern.finditer(text):
            if not _trusted(match.group("url")):
                found.append(Finding(Kind.UNTRUSTED_PACKAGE_INDEX, excerpt_of(text, match).strip()))
    return found
