"""A bank's review policy (memories.review.policy_models.ReviewPolicy): its reviewers'
guidelines, how many independent decisions an item needs, and who decides
alone under it (every door that makes an item servable asks ``decides_alone``)."""

from __future__ import annotations

import uuid

from django.db import transaction

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank, Membership, Role
from memories.items.models import MemoryItem
from memories.review.policy_models import (
    GUIDELINES_MAX,
    Distribution,
    ReviewPolicy,
    ReviewSeat,
    ReviewVote,
    SavedQueueView,
    SeatSource,
    VoteDecision,
)
from memories.review.seats import dealt_places_free, policy_lock, review_deal
from reasoningbank_site.errors import Forbidden, Invalid
from reasoningbank_site.text import has_control_chars

DECISIONS_MAX = 5
ONE_DECISION_OPEN = (
    "Round-robin and Claimed apply only when an item needs 2 or more decisions: with one, any reviewer gives it. "
    "Choose Open, or ask for more decisions."
)


def review_policy_get(*, bank: Bank) -> ReviewPolicy:
    """``bank``'s policy, or the defaults (unsaved) when it has none yet."""
    return ReviewPolicy.objects.filter(bank=bank).first() or ReviewPolicy(bank=bank)


def decides_alone(*, bank, user=None) -> bool:
    """Whether ``user`` (None: an API token or the pipeline) decides on ``bank``'s items alone: anyone
    under a policy of one decision per item; under a policy of several, only the team's owners and admins."""
    if review_policy_get(bank=bank).decisions_required <= 1:
        return True
    if user is None:
        return False
    return Membership.objects.filter(team_id=bank.team_id, user=user, role__in=(Role.OWNER, Role.ADMIN)).exists()


def decision_alone_check(*, bank, user=None, doing: str) -> None:
    """Refuse ``doing`` (what would be decided, in words: "approve an item") to whoever does not decide
    alone on ``bank`` (decides_alone). Raises Forbidden (code ``several_decisions_required``) naming the
    policy and who may."""
    if decides_alone(bank=bank, user=user):
        return
    who = "an API token" if user is None else "a reviewer"
    required = review_policy_get(bank=bank).decisions_required
    raise Forbidden(
        f"This bank's review policy needs {required} independent decisions per item: {who} cannot {doing} "
        "alone. Reviewers vote on the review page; an owner or admin decides outright.",
        code="several_decisions_required",
    )


def review_vote_first(*, item: MemoryItem, author) -> None:
    """Record ``author``'s approve as the first vote on ``item``, which they just wrote as proposed (their
    "Approve now" under a policy of several decisions), with a place on it under a seated policy."""
    policy = policy_lock(bank=item.bank)
    if policy.seated:
        source = SeatSource.DEALT if policy.distribution == Distribution.ROUND_ROBIN else SeatSource.CLAIMED
        ReviewSeat.objects.get_or_create(item=item, user=author, defaults={"source": source})
    ReviewVote.objects.create(item=item, user=author, decision=VoteDecision.APPROVE)


@transaction.atomic
def review_policy_update(
    *, bank: Bank, actor, guidelines: str, decisions_required: int, distribution: str = Distribution.OPEN
) -> ReviewPolicy:
    """Set ``bank``'s guidelines (markdown), the independent decisions an item needs (1 to DECISIONS_MAX)
    and who gives them (memories.review.policy_models.Distribution), creating the policy on first use; audited as
    ``review_policy.update``. A round-robin policy deals the waiting items at once (review_seats); leaving
    round-robin frees the dealt places nobody decided on (``places_freed`` in the audit event), so they can be
    claimed. Raises Invalid for over-long guidelines, a number out of range, an unknown distribution, or
    round-robin or claimed with one decision per item (where they would do nothing)."""
    guidelines = (guidelines or "").strip()
    if len(guidelines) > GUIDELINES_MAX:
        raise Invalid(f"Guidelines are at most {GUIDELINES_MAX} characters (got {len(guidelines)}).")
    if not isinstance(decisions_required, int) or not 1 <= decisions_required <= DECISIONS_MAX:
        raise Invalid(f"Decisions per item must be a whole number from 1 to {DECISIONS_MAX}.")
    if distribution not in Distribution.values:
        raise Invalid(f"distribution must be one of {Distribution.values}, got {distribution!r}.")
    if decisions_required < 2 and distribution != Distribution.OPEN:
        raise Invalid(ONE_DECISION_OPEN)
    policy, _created = ReviewPolicy.objects.select_for_update().get_or_create(bank=bank)
    fields = ["guidelines", "decisions_required", "distribution"]
    before = {name: getattr(policy, name) for name in fields}
    policy.guidelines, policy.decisions_required, policy.distribution = guidelines, decisions_required, distribution
    policy.save(update_fields=[*fields, "updated_at"])
    after = {name: getattr(policy, name) for name in fields}
    if before["distribution"] == Distribution.ROUND_ROBIN and not (
        policy.seated and distribution == before["distribution"]
    ):
        after["places_freed"] = dealt_places_free(policy=policy)
    if {name: after[name] for name in fields} != before:
        audit_record(
            action=AuditAction.REVIEW_POLICY_UPDATE, bank=bank, user=actor, obj=policy, before=before, after=after
        )
    if policy.seated and distribution == Distribution.ROUND_ROBIN:
        review_deal(bank=bank, full=True)
    return policy


SAVED_VIEWS_MAX = 20


@transaction.atomic
def saved_view_save(*, bank: Bank, user, name: str, query: str) -> SavedQueueView:
    """Save (or replace, by name) ``user``'s queue filters ``query`` as ``name``. Raises Invalid for an empty or
    over-long name, or past SAVED_VIEWS_MAX views."""
    name = " ".join((name or "").split())
    if has_control_chars(name) or "\x00" in (query or ""):
        raise Invalid("A view's name is one line of text.")
    if not name or len(name) > 80:
        raise Invalid("Name the view (at most 80 characters).")
    view = SavedQueueView.objects.filter(bank=bank, user=user, name=name).first()
    if view is None and SavedQueueView.objects.filter(bank=bank, user=user).count() >= SAVED_VIEWS_MAX:
        raise Invalid(f"At most {SAVED_VIEWS_MAX} saved views: delete one first.")
    view = view or SavedQueueView(bank=bank, user=user, name=name)
    view.query = (query or "")[:2000]
    view.save()
    return view


def saved_view_delete(*, bank: Bank, user, public_id) -> bool:
    """Delete ``user``'s saved view ``public_id`` of ``bank``; False when there is no such view of theirs."""
    try:
        key = uuid.UUID(str(public_id))
    except ValueError:
        return False
    deleted, _ = SavedQueueView.objects.filter(bank=bank, user=user, public_id=key).delete()
    return bool(deleted)
