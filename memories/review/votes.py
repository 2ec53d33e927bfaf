"""Several independent decisions per item, when a bank's review policy asks
for them (``ReviewPolicy.decisions_required`` > 1): a reviewer's approve or
reject is recorded as a vote, hidden from the others; once the item has all
its votes, agreement applies the decision and disagreement leaves the item
proposed, marked for an owner or admin to resolve. Owners and admins decide
outright (that is how they resolve a conflict). Whatever else makes an item
servable follows the same policy (``memories.review.policy.decides_alone``): a reviewer's "Approve
now" is her first vote on a proposed item, and a reviewer or an API token
may not approve, reject, change an approved item's text or import a release
on their own."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import OuterRef, Subquery

from accounts.models import Membership, Role
from memories.items.models import REASON_MAX, ItemStatus, MemoryItem
from memories.items.versions import item_lock
from memories.review.decisions import memory_item_approve, memory_item_reject
from memories.review.policy_models import ReviewPolicy, ReviewVote, VoteDecision
from memories.review.seats import policy_lock, seat_take
from memories.review.selectors import REVIEWERS_DISAGREE as CONFLICT_PREFIX
from reasoningbank_site.errors import Conflict, Invalid


@dataclass
class VoteOutcome:
    recorded: bool  # a vote was recorded (False: the decision was applied directly)
    votes: int  # votes on the item now
    required: int
    applied: str = ""  # "approve" / "reject" once the votes agreed (or the decision was direct)
    conflict: bool = False

    @property
    def waiting(self) -> int:
        return max(0, self.required - self.votes)


def decisions_required(*, bank) -> int:
    return ReviewPolicy.objects.filter(bank=bank).values_list("decisions_required", flat=True).first() or 1


def votes_needed(*, bank, membership: Membership) -> bool:
    """Whether ``membership``'s approve/reject on ``bank`` is a vote (a policy of several decisions, below admin)."""
    return not membership.has_role(Role.ADMIN) and decisions_required(bank=bank) > 1


@transaction.atomic
def review_vote_cast(
    *,
    item: MemoryItem,
    author,
    decision: str,
    reason: str = "",
    confirm_duplicate: bool = False,
    confirm_risks: bool = False,
) -> VoteOutcome:
    """Record ``author``'s independent ``decision`` ("approve" or "reject", a reason required to reject) on
    the proposed ``item``. The last vote applies the decision when all agree (as ``author``, through
    memory_item_approve / memory_item_reject, which may raise DuplicateApproval or RisksNeedConfirmation), else marks the conflict
    in ``needs_review_reason``. Under a round-robin or claimed policy only the item's seat holders vote
    (memories.review.seats.seat_take, which claims a free place). Raises Invalid for another
    decision or a rejection without a reason, Conflict when the item is not proposed, already has all its votes, is not ``author``'s to decide, or
    ``author`` voted on it already."""
    if decision not in VoteDecision.values:
        raise Invalid(f"decision must be one of {VoteDecision.values}")
    reason = (reason or "").strip()[:2000]
    if decision == VoteDecision.REJECT and not reason:
        raise Invalid("A rejection needs a reason.")
    # The policy's row before the item's: dealing places (review_seats) takes them in that order too.
    policy = policy_lock(bank=item.bank)
    item_lock(item)
    if item.status != ItemStatus.PROPOSED:
        raise Conflict(f"This item is {item.status}: it takes no more votes.")
    required = policy.decisions_required
    votes = list(ReviewVote.objects.filter(item=item).order_by("created_at", "id"))
    if len(votes) >= required:
        raise Conflict("This item has all the decisions it needs: an owner or admin resolves it.")
    if any(v.user_id == author.pk for v in votes):
        raise Conflict("You already decided on this item; the others' decisions are still to come.")
    seat_take(item=item, author=author, policy=policy)
    vote = ReviewVote(item=item, user=author, decision=decision, reason=reason)
    votes.append(vote)
    if len(votes) < required:
        vote.save()
        return VoteOutcome(recorded=True, votes=len(votes), required=required)
    decisions = {v.decision for v in votes}
    if len(decisions) == 1:
        # Applied first: a refused approval (a near-duplicate to confirm) records nothing, so the vote can be cast again.
        note = f"{required} of {required} reviewers agreed"
        if decision == VoteDecision.APPROVE:
            memory_item_approve(
                item=item,
                author=author,
                confirm_duplicate=confirm_duplicate,
                confirm_risks=confirm_risks,
                agreed=True,
            )
        else:
            reasons = "; ".join(v.reason for v in votes if v.reason)
            memory_item_reject(item=item, author=author, reason=f"{reasons} ({note})"[:REASON_MAX], agreed=True)
        vote.save()
        return VoteOutcome(recorded=True, votes=len(votes), required=required, applied=decision)
    vote.save()
    item.needs_review_reason = votes_flag(votes=votes, required=required)
    item.save(update_fields=["needs_review_reason", "updated_at"])
    return VoteOutcome(recorded=True, votes=len(votes), required=required, conflict=True)


def votes_flag(*, votes: list[ReviewVote], required: int) -> str:
    """The review flag of a proposed item whose ``required`` votes are all in ("" while some are missing):
    a conflict, or agreement whose decision was taken back since; either way an owner or admin decides."""
    if len(votes) < required:
        return ""
    approve = sum(v.decision == VoteDecision.APPROVE for v in votes)
    if 0 < approve < len(votes):
        return f"{CONFLICT_PREFIX} ({approve} approve, {len(votes) - approve} reject): an owner or admin decides."
    decision = votes[0].decision
    return f"All {len(votes)} reviewers decided to {decision}; that decision was taken back: an owner or admin decides."


def item_returned_flag(item: MemoryItem) -> str:
    """The review flag ``item`` gets back when a revert returns it to proposed: its votes, if all are in."""
    votes = list(ReviewVote.objects.filter(item=item).order_by("created_at", "id"))
    return votes_flag(votes=votes, required=decisions_required(bank=item.bank)) if votes else ""


def item_votes_visible(
    *, item: MemoryItem, user, membership: Membership, required: int | None = None
) -> tuple[list[ReviewVote], bool]:
    """The votes on ``item`` that ``user`` may see, and whether ``user`` voted: all once the item has them
    all (``required``, the bank's decisions per item, read when not given) or for owners and admins, who
    resolve conflicts; else only the user's own."""
    votes = list(ReviewVote.objects.filter(item=item).select_related("user").order_by("created_at", "id"))
    mine = any(v.user_id == user.pk for v in votes)
    if required is None:
        required = decisions_required(bank=item.bank)
    if membership.has_role(Role.ADMIN) or len(votes) >= required:
        return votes, mine
    return [v for v in votes if v.user_id == user.pk], mine


def with_my_vote(rows, *, user):
    """``rows`` (a queryset of items) annotated with ``my_vote``: ``user``'s own independent decision
    ("approve" / "reject", None without one), the only one a reviewer sees before all are in."""
    mine = ReviewVote.objects.filter(item=OuterRef("pk"), user=user).values("decision")[:1]
    return rows.annotate(my_vote=Subquery(mine))
