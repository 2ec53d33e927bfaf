"""Template filters of an item page's lifecycle panel (templates/memories/includes/item_lifecycle.html)
and the folding of its long evidence lists."""

from __future__ import annotations

from django import template

from memories.items.models import SupportKind
from memories.learning.validity import validity_label

register = template.Library()

register.filter("validity", validity_label)  # a validity as reviewers read it: "5 Mar 2031", in their time zone

FOLD_AFTER = 5  # entries of a long evidence list shown before its "Show all N"


@register.filter
def fold(entries) -> tuple[list, list]:
    """A long list as (the first FOLD_AFTER entries, the rest): the page shows the rest under "Show all N"."""
    entries = list(entries or ())
    return entries[:FOLD_AFTER], entries[FOLD_AFTER:]


@register.filter
def repeats(supports) -> list:
    """The supports of an item that are repeats of it after it was refused."""
    return [s for s in supports or () if s.kind == SupportKind.REPEATED]
