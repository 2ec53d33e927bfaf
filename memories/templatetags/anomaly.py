"""Template helper for the item page: the item's anomaly score beside its findings."""

from __future__ import annotations

from django import template

from memories.trust.anomaly.reads import item_anomaly

register = template.Library()

register.simple_tag(lambda item: item_anomaly(item=item), name="item_anomaly")
