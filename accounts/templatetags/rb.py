"""Template helpers shared by every page."""

import datetime
from functools import cache

from django import template
from django.conf import settings
from django.template.defaultfilters import stringfilter
from django.urls import get_script_prefix, get_urlconf
from django.utils.safestring import mark_safe
from django.utils.text import Truncator, add_truncation_text, calculate_truncate_chars_length

from accounts.audit.diff import audit_changes as _audit_changes
from reasoningbank_site.text import ago as _ago
from reasoningbank_site.text import prompt_version_label
from reasoningbank_site.views_helpers import reverse_each

register = template.Library()

# (url name, label): a bank's pages in nav order.
BANK_PAGES = [
    ("trajectories:dashboard", "Dashboard"),
    ("memories:review", "Review"),
    ("memories:items", "Memories"),
    ("trajectories:list", "Trajectories"),
    ("memories:playground", "Playground"),
    ("trajectories:impact", "Impact"),
    ("trajectories:releases", "Releases"),
    ("trajectories:evaluations", "Evaluations"),
    ("trajectories:judge", "Judge"),
    ("trajectories:export", "Export"),
    ("accounts:bank_tokens", "Tokens"),
    ("accounts:bank_settings", "Settings"),
    ("accounts:bank_audit", "Audit"),
]


@cache
def _bank_page_links(script_prefix: str, urlconf) -> tuple:
    """(url name, label, link) of each bank page, ``link(public_id)`` its path (reverse_each): reversed once per
    script prefix and URLconf, the ones current when called: every bank page prints them all, so a resolver walk
    for each would be paid on every page."""
    return tuple((name, label, reverse_each(name, "bank_id")) for name, label in BANK_PAGES)


@register.inclusion_tag("includes/banknav.html", takes_context=True)
def bank_nav(context, bank):
    request = context.get("request")
    current = request.path if request else ""
    links = []
    for name, label, link in _bank_page_links(get_script_prefix(), get_urlconf(settings.ROOT_URLCONF)):
        url = link(bank.public_id)
        active = current == url or (url != "/" and current.startswith(url) and name != "trajectories:dashboard")
        links.append({"url": url, "label": label, "active": active})
    return {"bank_nav": links}


@register.filter
def prompt_label(value) -> str:
    """A recorded prompt version without the bank's internal id (reasoningbank_site.text.prompt_version_label)."""
    return prompt_version_label(str(value or ""))


@register.filter
def ago(value) -> str:
    """ "just now" under a minute, else "3 minutes ago" (reasoningbank_site.text.ago)."""
    return _ago(value)


@register.filter(expects_localtime=True)
def iso(value) -> str:
    """``date:'c'`` (ISO 8601, in the current time zone) without the format
    machinery, which ``date`` runs for every row, for a "… ago" cell's title."""
    if not isinstance(value, datetime.date):
        return ""
    return mark_safe(value.isoformat())  # digits, "-", ":", "T", "+" and ".": nothing to escape


@register.filter(is_safe=True)
@stringfilter
def clip(value: str, length: int) -> str:
    """``truncatechars`` with a fast path for ASCII text (no combining
    characters, already NFC), which it cuts by slicing: ``Truncator``
    normalises and walks the text on every call, and a list has a preview per row."""
    length = int(length)
    if length <= 0 or not value.isascii():
        return Truncator(value).chars(length)
    if len(value) <= length:
        return value
    return add_truncation_text(value[: calculate_truncate_chars_length(length, None)])


@register.filter
def audit_changes(event) -> list:
    """An audit event's before/after as field changes (accounts.audit.diff)."""
    return _audit_changes(event.before, event.after)
