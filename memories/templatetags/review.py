"""``{% review_guidelines bank %}``: the bank's reviewer guidelines panel (the queue and the focus view)."""

from django import template

from memories.review.guidelines import guidelines_html
from memories.review.policy_models import ReviewPolicy, SavedQueueView
from memories.review.views.decisions import queue_query

register = template.Library()


@register.inclusion_tag("memories/includes/guidelines_panel.html")
def review_guidelines(bank, open_panel=False, policy=None):
    """``policy``: the bank's ReviewPolicy when the page has it already (else read here)."""
    if policy is not None:
        text = policy.guidelines
    else:
        text = ReviewPolicy.objects.filter(bank=bank).values_list("guidelines", flat=True).first() or ""
    return {"bank": bank, "guidelines": guidelines_html(text), "open_panel": open_panel}


@register.inclusion_tag("memories/includes/saved_views.html", takes_context=True)
def saved_queue_views(context, bank):
    """The reviewer's saved queue views (links), and a form saving the queue's current filters."""
    request = context["request"]
    views = SavedQueueView.objects.filter(bank=bank, user=request.user).order_by("name")
    return {"bank": bank, "views": views, "current": queue_query(request.GET), "csrf_token": context.get("csrf_token")}
