"""``{% review_guidelines bank %}``: the bank's reviewer guidelines panel (the queue and the focus view)."""

from django import template
from django.urls import reverse

from memories.review.guidelines import guidelines_html
from memories.review.policy_models import ReviewPolicy, SavedQueueView
from memories.review.views.decisions import queue_query

register = template.Library()


@register.inclusion_tag("memories/includes/guidelines_panel.html", takes_context=True)
def review_guidelines(context, bank, open_panel=False, policy=None, panel=None):
    """``policy``: the bank's ReviewPolicy when the page has it already (else read here). ``panel``: a
    GuidelinesPanel (memories.review.guidelines) makes the fold the reviewer's, remembered for them."""
    if policy is not None:
        text = policy.guidelines
    else:
        text = ReviewPolicy.objects.filter(bank=bank).values_list("guidelines", flat=True).first() or ""
    shown = {"bank": bank, "guidelines": guidelines_html(text), "open_panel": open_panel}
    if panel is not None and text.strip():
        request = context["request"]
        shown.update(
            open_panel=panel.open,
            changed=panel.changed,
            foldable=True,
            fold_url=reverse("memories:guidelines_fold", kwargs={"bank_id": bank.public_id}),
            here=request.get_full_path(),
            csrf_token=context.get("csrf_token"),
        )
    return shown


@register.inclusion_tag("memories/includes/saved_views.html", takes_context=True)
def saved_queue_views(context, bank):
    """The reviewer's saved queue views (links), and a form saving the queue's current filters."""
    request = context["request"]
    views = SavedQueueView.objects.filter(bank=bank, user=request.user).order_by("name")
    return {"bank": bank, "views": views, "current": queue_query(request.GET), "csrf_token": context.get("csrf_token")}
