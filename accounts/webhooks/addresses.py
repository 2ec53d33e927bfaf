"""Which receivers a webhook may call. A receiver is refused when its host
is a cloud metadata name, or when any address it resolves to is link-local,
a metadata address, or not unicast; private and loopback addresses are
refused too unless RB_WEBHOOK_ALLOW_PRIVATE is on (self-hosted receivers).
An IPv6 address that carries an IPv4 address (mapped, compatible, translated,
NAT64, 6to4, Teredo) is judged by what it carries as well.
The check runs when a subscription is made and again before every attempt,
and the attempt connects to the address that was checked, so a DNS answer
that changes in between (rebinding) cannot send it elsewhere."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from accounts.errors import AccountsInvalid

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2000

# Names that answer with instance credentials on the major clouds.
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
# Metadata and platform addresses outside 169.254.0.0/16 (AWS IPv6, Alibaba, Azure's wire server).
METADATA_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("fd00:ec2::254/128", "100.100.100.200/32", "168.63.129.16/32")
)
# Not routed on the internet, though ipaddress (by Python version) may call them global or reserved:
# IPv4-compatible, IPv4-translated, local-use NAT64, site-local, IETF protocol assignments, Teredo.
NOT_GLOBAL = tuple(
    ipaddress.ip_network(n)
    for n in ("::/96", "::ffff:0:0:0/96", "64:ff9b:1::/48", "fec0::/10", "192.0.0.0/24", "2001::/32")
)
# IPv6 forms whose low 32 bits are the IPv4 address (IPv4-compatible, IPv4-translated, NAT64).
LOW_BITS_IPV4 = tuple(ipaddress.ip_network(n) for n in ("::/96", "::ffff:0:0:0/96", "64:ff9b::/96"))
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")
# Translation forms routed on the internet: only the IPv4 address they carry decides (6to4, NAT64).
GLOBAL_TRANSLATION = tuple(ipaddress.ip_network(n) for n in ("2002::/16", "64:ff9b::/96"))
ALLOW_PRIVATE_HINT = "set RB_WEBHOOK_ALLOW_PRIVATE=true to allow private networks for a self-hosted receiver"


class ReceiverRefused(AccountsInvalid):
    """The URL is not one a webhook may call (the message says why)."""

    code = "webhook_url_refused"


@dataclass(frozen=True)
class Receiver:
    """A checked URL, split into what an attempt needs."""

    url: str
    scheme: str
    host: str
    port: int
    path: str  # path and query, at least "/"


def receiver_parse(url: str) -> Receiver:
    """``url`` checked for shape (http or https, a host, no credentials) and
    for a metadata host name. Raises ReceiverRefused."""
    url = (url or "").strip()
    if not url:
        raise ReceiverRefused("Give the receiver's URL (http:// or https://).")
    if len(url) > MAX_URL_LENGTH:
        raise ReceiverRefused(f"The URL is longer than {MAX_URL_LENGTH} characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ReceiverRefused(f"This is not a valid URL: {exc}.") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ReceiverRefused(f"Webhook URLs must start with http:// or https://, not {parts.scheme or 'nothing'}:.")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise ReceiverRefused("The URL has no host.")
    if parts.username is not None or parts.password is not None:
        raise ReceiverRefused("Put no user name or password in the URL: verify the signature instead.")
    if host in METADATA_HOSTS:
        raise ReceiverRefused(f"{host} is a cloud metadata address; webhooks never call it.")
    scheme = parts.scheme.lower()
    path = urlunsplit(("", "", parts.path or "/", parts.query, ""))
    return Receiver(url=url, scheme=scheme, host=host, port=port or (443 if scheme == "https" else 80), path=path)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses a connection to ``ip`` may end at: the one that an
    IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64 (64:ff9b::/96) or 6to4
    address carries, a Teredo address's server and client, and for the
    local-use NAT64 prefix every place RFC 6052 lets a network put it."""
    if ip.ipv4_mapped is not None:
        return (ip.ipv4_mapped,)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        return ip.teredo
    value = int(ip)
    if ip in NAT64_LOCAL_USE:
        # 0.0.0.0 is what a shorter prefix reads from most addresses: it would refuse them all.
        found = (_rfc6052_ipv4(value, length) for length in (48, 56, 64, 96))
        return tuple(dict.fromkeys(a for a in found if not a.is_unspecified))
    if any(ip in network for network in LOW_BITS_IPV4) and value > 1:  # not :: or ::1
        return (ipaddress.IPv4Address(value & 0xFFFFFFFF),)
    return ()


def _rfc6052_ipv4(value: int, prefix_length: int) -> ipaddress.IPv4Address:
    """The IPv4 address after a ``prefix_length`` prefix (RFC 6052: bits 64-71 are skipped)."""
    if prefix_length == 96:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    without_u = ((value >> 64) << 56) | (value & ((1 << 56) - 1))  # 120 bits
    return ipaddress.IPv4Address((without_u >> (120 - prefix_length - 32)) & 0xFFFFFFFF)


def address_refusal(ip: IPAddress, *, allow_private: bool) -> str | None:
    """Why a webhook may not call ``ip``, or None when it may. An IPv6 address
    that carries IPv4 addresses is refused when any of them is; the forms that
    are not routed on the internet are private themselves."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None:
        for carried in embedded_ipv4(ip):
            refusal = _plain_refusal(carried, allow_private=allow_private)
            if refusal:
                return f"{ip} carries the IPv4 address {carried}, and {refusal}"
        if any(ip in network for network in GLOBAL_TRANSLATION):
            return None
    elif isinstance(ip, ipaddress.IPv6Address):
        ip = ip.ipv4_mapped  # only notation: the connection is IPv4
    return _plain_refusal(ip, allow_private=allow_private)


def address_is_private(ip: IPAddress) -> bool:
    """Whether ``ip`` is one that only RB_WEBHOOK_ALLOW_PRIVATE lets a webhook call."""
    return address_refusal(ip, allow_private=False) is not None


def _plain_refusal(ip: IPAddress, *, allow_private: bool) -> str | None:
    if any(ip in network for network in METADATA_NETWORKS):
        return f"{ip} is a cloud metadata address"
    if ip.is_link_local:
        return f"{ip} is a link-local address (where cloud metadata services answer)"
    if ip.is_multicast or ip.is_unspecified:
        return f"{ip} is not a unicast address"
    if not any(ip in network for network in NOT_GLOBAL):
        if ip.is_reserved and not ip.is_loopback:
            return f"{ip} is a reserved address"
        if ip.is_global and not ip.is_private:
            return None
    if allow_private:
        return None
    return f"{ip} is a private or loopback address ({ALLOW_PRIVATE_HINT})"


def receiver_addresses(receiver: Receiver) -> list[IPAddress]:
    """The addresses ``receiver``'s host resolves to now, every one of them
    allowed (settings.RB_WEBHOOK_ALLOW_PRIVATE). Raises ReceiverRefused when
    the host does not resolve or any address is refused (a name that also
    answers with a refused address could be made to use it)."""
    try:
        found = socket.getaddrinfo(receiver.host, receiver.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ReceiverRefused(f"The host {receiver.host} could not be resolved ({exc}).") from None
    addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in found))
    if not addresses:
        raise ReceiverRefused(f"The host {receiver.host} has no address.")
    allow_private = settings.RB_WEBHOOK_ALLOW_PRIVATE
    for ip in addresses:
        refusal = address_refusal(ip, allow_private=allow_private)
        if refusal:
            shown = "" if receiver.host == str(ip) else f"{receiver.host} resolves to "
            raise ReceiverRefused(f"Webhooks may not call this URL: {shown}{refusal}.")
    return addresses


def receiver_check(url: str) -> Receiver:
    """``url`` parsed and its host's addresses checked (receiver_parse, then receiver_addresses)."""
    receiver = receiver_parse(url)
    receiver_addresses(receiver)
    return receiver
