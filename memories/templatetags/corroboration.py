"""Template helper for corroboration before serving: an item's independent
sources against its bank's policy (read once per page)."""

from __future__ import annotations

from types import SimpleNamespace

from django import template

from memories.items.corroboration import COUNT_FIELDS
from memories.items.models import MemoryItem
from memories.trust.corroboration import Corroboration, corroboration_of

register = template.Library()


@register.simple_tag(takes_context=True)
def item_corroboration(context, item: MemoryItem) -> Corroboration | None:
    """``item``'s Corroboration (an item, or a queue row's dict of its fields, of the page's ``bank``), or None
    when the bank does not require corroboration."""
    bank = context.get("bank")
    if bank is None:
        return None
    policy = getattr(bank, "trust_policy", None)  # read once per bank object: the reverse one-to-one caches it
    if isinstance(item, dict):
        item = SimpleNamespace(**{name: item.get(name, 0) for name in COUNT_FIELDS})
    return corroboration_of(item=item, policy=policy)
