"""Template helpers for the risk findings an item page shows: the findings
with the text around each excerpt (so the excerpt can be highlighted where it
sits), and invisible characters made visible."""

from __future__ import annotations

import re

from django import template

from memories.items.models import MemoryItem
from memories.trust.models import tier_name
from memories.trust.risk_reads import item_risks, risk_label
from memories.trust.selectors import item_tier

register = template.Library()

CONTEXT_CHARS = 60
_INVISIBLE = re.compile(r"[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]")


@register.filter
def visible(text: str) -> str:
    """``text`` with each invisible character written as ⟨U+XXXX⟩ (a reviewer cannot see the real ones)."""
    return _INVISIBLE.sub(lambda m: f"⟨U+{ord(m.group(0)):04X}⟩", text or "")


register.filter("risk_label", risk_label)

FIELDS = ("title", "description", "content")


def _in_field(item: MemoryItem, excerpt: str) -> tuple[str, str, str]:
    """(the field of ``item`` holding ``excerpt``, up to CONTEXT_CHARS of that field's text before it, and
    after it); ("", "", "") when no one field holds it. The context never runs into the next field."""
    for field in FIELDS:
        text = getattr(item, field)
        at = text.find(excerpt)
        if at >= 0:
            end = at + len(excerpt)
            return field, text[max(0, at - CONTEXT_CHARS) : at], text[end : end + CONTEXT_CHARS]
    return "", "", ""


@register.simple_tag
def item_risk_findings(item: MemoryItem) -> list[dict]:
    """The item's findings for its page: kind label, where it was found (the
    field of the item, or a step of its source run), the excerpt with up to
    CONTEXT_CHARS characters of that field's text on each side, and who
    confirmed it."""
    out = []
    for finding in item_risks(item=item):
        field, before, after = _in_field(item, finding.excerpt)
        who = finding.confirmed_by or finding.confirmed_token
        out.append(
            {
                "kind": finding.kind,
                "label": risk_label(finding.kind),
                "excerpt": finding.excerpt,
                "before": before,
                "after": after,
                "step": finding.step,
                "field": field,
                "in_item": bool(field),
                "confirmed": finding.confirmed,
                "confirmed_by": str(who) if who else "",
                "confirmed_at": finding.confirmed_at,
            }
        )
    return out


@register.simple_tag
def item_verdict_tier(item: MemoryItem) -> str:
    """The item's trust tier as reviewers read it: "agent", "judge", "human", or "" (no verdict)."""
    return tier_name(item_tier(item=item))
