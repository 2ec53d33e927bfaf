"""Template filters of the lifecycle badges and panel (templates/memories/includes/lifecycle_*.html)."""

from __future__ import annotations

from django import template
from django.utils import timezone

from memories.items.models import ItemStatus, SupportKind

register = template.Library()


@register.filter
def is_past(value) -> bool:
    """Whether a moment (a validity) is behind us; False for none."""
    return value is not None and value != "" and value <= timezone.now()


@register.filter
def repeats(supports) -> list:
    """The supports of an item that are repeats of it after it was refused."""
    return [s for s in supports or () if s.kind == SupportKind.REPEATED]


@register.filter
def refused(item) -> bool:
    """Whether a reviewer refused ``item`` (rejected, or archived as wrong)."""
    status = getattr(item, "status", "")
    return status == ItemStatus.REJECTED or (
        status == ItemStatus.ARCHIVED and getattr(item, "archived_as_wrong", False)
    )
