"""``{% review_guidelines bank %}``: the bank's reviewer guidelines panel (the queue and the focus view)."""

from django import template

from memories.guidelines import guidelines_html
from memories.models import ReviewPolicy

register = template.Library()


@register.inclusion_tag("memories/includes/guidelines_panel.html")
def review_guidelines(bank, open_panel=False):
    text = ReviewPolicy.objects.filter(bank=bank).values_list("guidelines", flat=True).first() or ""
    return {"bank": bank, "guidelines": guidelines_html(text), "open_panel": open_panel}
