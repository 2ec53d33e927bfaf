"""Where a lesson would send an agent: URLs of any scheme (their host), bare
domains, IP addresses, ``git@host:`` and ``ssh user@host`` targets, and
e-mail addresses. Read on the text with obfuscated dots and schemes written
back (shapes.deobfuscate); hosts are normalised (lower-case, IDNA ASCII form,
no ``www.``, no trailing dot, URL-encoding undone), so "https://WWW.Exämple.com"
and "xn--exmple-cua.com" are one host."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from urllib.parse import unquote, urlsplit

from memories.trust.actions.shapes import Action, ActionKind, action, deobfuscate, original

# A URL: any scheme with "//". Its host's labels may be in any script ("https://例え.jp"); its last label
# and its path stop at white space, quotes, a bracket closing a markdown link, and CJK text (a Japanese
# sentence goes on right after a link, with no space).
_STOP = r"\s<>\"'`)\]\u3000-\u30ff\u4e00-\u9fff\uff01-\uffef"
URL = re.compile(
    rf"(?<![\w+.-])([a-zA-Z][a-zA-Z0-9+.-]{{0,15}})://"
    rf"((?:[^\s/?#<>\"'`)\]\u3001\u3002]+?\.)*[^{_STOP}/?#]*(?:[/?#][^{_STOP}]*)?)"
)
# Storage schemes whose "host" is a bucket: the value keeps the scheme (s3://bucket).
BUCKET_SCHEMES = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "wasb", "wasbs", "hdfs", "oss", "r2"}
# Bare domains are read only under these top-level domains: common generic ones and country codes that are
# no usual file extension (".py", ".md", ".sh", ".rs", ".pl", ".zip" are files far more often than hosts)
# nor a usual attribute name of code ("self.app", "request.host", "response.page"): those need a scheme.
BARE_TLDS = (
    "com net org io dev ai co xyz info biz me us uk de fr ru cn jp nl es it br eu ca au ch se no tk top site "
    "cloud tech gov edu mil int ly gg su kr tw hk sg nz za ir kp cc pw club "
    "ml ga cf gq icu cyou buzz lol vip"
).split()
BARE = re.compile(
    r"(?<![\w@./:%+-])((?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+"
    rf"(?:{'|'.join(BARE_TLDS)}|xn--[a-z0-9-]{{2,30}}))(?![\w-]|\.[a-zA-Z0-9]|\()",
    re.I,
)
IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w]|\.\d)")
EMAIL = re.compile(r"(?<![\w.+-])([\w.+-]{1,64})@((?:[a-zA-Z0-9-]+\.)+[a-zA-Z]{2,24})(?![\w-])")
# "ssh deploy@host", "scp f root@host:/tmp", "git@github.com:org/repo": a host to log in to, not an address.
LOGIN = re.compile(r"\b(?:ssh|scp|sftp|rsync|mosh)\b[^\n]{0,80}$", re.I)


def host_normalise(host: str) -> str:
    """``host`` as the bank compares hosts: URL-encoding undone, NFKC, lower-case, ideographic full stops
    as dots, no trailing dot, no ``www.``, brackets of an IPv6 address dropped, IDNA ASCII form."""
    host = unicodedata.normalize("NFKC", unquote(host or "")).strip().strip("[]")
    host = host.replace("\u3002", ".").replace("\uff61", ".").lower().rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _url_host(scheme: str, rest: str) -> str:
    """The normalised host of ``scheme://rest`` ("" for none: file:///x); a bucket scheme keeps its scheme."""
    rest = unquote(rest)
    try:
        host = urlsplit(f"{scheme}://{rest}").hostname or ""
    except ValueError:
        return ""
    host = host_normalise(host)
    if not host:
        return ""
    scheme = scheme.lower()
    return f"{scheme}://{host}" if scheme in BUCKET_SCHEMES else host


def _ip(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return ""


def network_actions(text: str) -> list[Action]:
    """The hosts (URLs of any scheme, bare domains, IPs, login targets) and e-mail addresses in ``text``,
    each with the exact excerpt it was read from, in the order they appear."""
    plain, where = deobfuscate(text or "")
    found: list[tuple[int, Action]] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return not any(s < end and start < e for s, e in taken)

    def add(start: int, end: int, kind: str, value: str) -> None:
        if value:
            found.append((start, action(kind, value, original(text, where, start, end))))
            taken.append((start, end))

    for m in URL.finditer(plain):
        rest = m.group(2).rstrip(".,;:!?*_")
        add(m.start(), m.start(1) + len(m.group(1)) + 3 + len(rest), ActionKind.HOST, _url_host(m.group(1), rest))
    for m in EMAIL.finditer(plain):
        if not free(m.start(), m.end()):
            continue
        before = plain[plain.rfind("\n", 0, m.start()) + 1 : m.start()]
        if plain[m.end() : m.end() + 1] == ":" or LOGIN.search(before) or m.group(1).lower() == "git":
            add(m.start(), m.end(), ActionKind.HOST, host_normalise(m.group(2)))
        else:
            add(m.start(), m.end(), ActionKind.EMAIL, f"{m.group(1)}@{host_normalise(m.group(2))}".lower())
    for m in IPV4.finditer(plain):
        if free(m.start(), m.end()):
            add(m.start(), m.end(), ActionKind.HOST, _ip(m.group(1)))
    for m in BARE.finditer(plain):
        if free(m.start(), m.end()):
            add(m.start(), m.end(), ActionKind.HOST, host_normalise(m.group(1)))
    return [a for _, a in sorted(found, key=lambda pair: pair[0])]
