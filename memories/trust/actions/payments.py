"""Where a lesson would send money: IBANs (checksum validated), crypto
wallets (Bitcoin and Tron addresses with their checksum, Ethereum addresses,
Bitcoin bech32), card numbers (Luhn, grouped or named as a card), account and
routing numbers (after a word naming one, in several languages; a routing
number's checksum validated) and SWIFT/BIC codes (after "SWIFT" or "BIC").
Values: "iban:DE89370400440532013000", "eth:0x…", "card:4111…", "account:…"."""

from __future__ import annotations

import hashlib
import re

from memories.trust.actions.shapes import Action, ActionKind, action

IBAN = re.compile(r"\b([A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?)\b")
ETH = re.compile(r"\b0x[a-fA-F0-9]{40}\b")
BECH32 = re.compile(r"\b(bc1|tb1)[ac-hj-np-z02-9]{11,71}\b", re.I)
BASE58 = re.compile(r"\b[13T][1-9A-HJ-NP-Za-km-z]{25,34}\b")
CARD = re.compile(r"(?<![\d-])([2-6]\d{3}(?:[ -]?\d{4}){2}[ -]?\d{1,7})(?![\d-])")
GROUPED = re.compile(r"^\d{4}([ -])\d{4}\1\d{4}\1\d{1,4}$")
# Words naming a card, an account, a routing number or a bank code (the number follows within a few words).
_CARD_WORDS = r"card|carte|karte|tarjeta|cartão|carta|カード|卡|visa|mastercard|amex|cc"
_ACCOUNT_WORDS = (
    r"account|acct|a/c|konto|compte|cuenta|conta|conto|rekening|口座|账户|賬戶|帳戶|账号|счёт|счет|rib|bsb|"
    r"sort\s*code|clabe|n[°º]\s*de\s*compte"
)
CARD_CONTEXT = re.compile(rf"(?:{_CARD_WORDS})[^\n\d]{{0,30}}$", re.I)
ACCOUNT = re.compile(rf"(?:{_ACCOUNT_WORDS})[^\n\d]{{0,30}}?(\d[\d -]{{4,22}}\d)(?![\d])", re.I)
ROUTING = re.compile(r"(?:routing|aba|rtn|transit)[^\n\d]{0,30}?(?<!\d)(\d{9})(?!\d)", re.I)
BIC = re.compile(r"(?:swift|bic)[^\n]{0,30}?\b([A-Z]{4}[A-Z]{2}[A-Z0-9]{2}(?:[A-Z0-9]{3})?)\b", re.I)
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def iban_valid(iban: str) -> bool:
    """The ISO 13616 mod-97 check of ``iban`` (no spaces)."""
    if not 15 <= len(iban) <= 34:
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def luhn_valid(digits: str) -> bool:
    total = 0
    for n, c in enumerate(reversed(digits)):
        d = int(c) * (2 if n % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def base58check_valid(text: str) -> bool:
    """A Base58Check address (Bitcoin legacy, Tron): its last 4 bytes are the double SHA-256 of the rest."""
    number = 0
    for c in text:
        number = number * 58 + _B58.index(c)
    raw = number.to_bytes(25, "big") if number < 1 << 200 else b""
    return len(raw) == 25 and hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:]


def aba_valid(digits: str) -> bool:
    d = [int(c) for c in digits]
    return sum(w * x for w, x in zip([3, 7, 1] * 3, d, strict=True)) % 10 == 0


def payment_actions(text: str) -> list[tuple[int, Action]]:
    """The payment identifiers in ``text`` with their offsets."""
    text = text or ""
    found: list[tuple[int, Action]] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match, group: int, value: str) -> None:
        start, end = m.span(group)
        if not any(s < end and start < e for s, e in taken):
            taken.append((start, end))
            found.append((start, action(ActionKind.PAYMENT, value, m.group(group))))

    for m in IBAN.finditer(text):
        iban = m.group(1).replace(" ", "")
        if iban_valid(iban):
            add(m, 1, f"iban:{iban}")
    for m in ETH.finditer(text):
        add(m, 0, f"eth:{m.group(0).lower()}")
    for m in BECH32.finditer(text):
        add(m, 0, f"btc:{m.group(0).lower()}")
    for m in BASE58.finditer(text):
        if base58check_valid(m.group(0)):
            add(m, 0, f"{'trx' if m.group(0)[0] == 'T' else 'btc'}:{m.group(0)}")
    for m in ROUTING.finditer(text):
        if aba_valid(m.group(1)):
            add(m, 1, f"routing:{m.group(1)}")
    for m in CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(1))
        named = CARD_CONTEXT.search(text[max(0, m.start() - 40) : m.start()])
        if 13 <= len(digits) <= 19 and luhn_valid(digits) and (GROUPED.match(m.group(1)) or named):
            add(m, 1, f"card:{digits}")
    for m in ACCOUNT.finditer(text):
        add(m, 1, "account:" + re.sub(r"\D", "", m.group(1)))
    for m in BIC.finditer(text):
        add(m, 1, f"bic:{m.group(1).upper()}")
    return found
