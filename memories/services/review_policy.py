"""A bank's review policy (memories.models.ReviewPolicy): its reviewers'
guidelines and how many independent decisions an item needs."""

from __future__ import annotations

from django.db import transaction

from accounts.models import Bank
from accounts.services.audit import audit_record
from memories.models import GUIDELINES_MAX, ReviewPolicy
from reasoningbank_site.errors import Invalid

DECISIONS_MAX = 5


def review_policy_get(*, bank: Bank) -> ReviewPolicy:
    """``bank``'s policy, or the defaults (unsaved) when it has none yet."""
    return ReviewPolicy.objects.filter(bank=bank).first() or ReviewPolicy(bank=bank)


@transaction.atomic
def review_policy_update(*, bank: Bank, actor, guidelines: str, decisions_required: int) -> ReviewPolicy:
    """Set ``bank``'s guidelines (markdown) and the independent decisions an item needs (1 to
    DECISIONS_MAX), creating the policy on first use; audited as ``review_policy.update``.
    Raises Invalid for over-long guidelines or a number out of range."""
    guidelines = (guidelines or "").strip()
    if len(guidelines) > GUIDELINES_MAX:
        raise Invalid(f"Guidelines are at most {GUIDELINES_MAX} characters (got {len(guidelines)}).")
    if not isinstance(decisions_required, int) or not 1 <= decisions_required <= DECISIONS_MAX:
        raise Invalid(f"Decisions per item must be a whole number from 1 to {DECISIONS_MAX}.")
    policy, _created = ReviewPolicy.objects.select_for_update().get_or_create(bank=bank)
    before = {"guidelines": policy.guidelines, "decisions_required": policy.decisions_required}
    policy.guidelines, policy.decisions_required = guidelines, decisions_required
    policy.save(update_fields=["guidelines", "decisions_required", "updated_at"])
    after = {"guidelines": guidelines, "decisions_required": decisions_required}
    if after != before:
        audit_record(action="review_policy.update", bank=bank, user=actor, obj=policy, before=before, after=after)
    return policy
