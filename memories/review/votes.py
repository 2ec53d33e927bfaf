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

from collections.abc import Collection
from dataclasses import dataclass

from django.db import transaction
from django.db.models import OuterRef, Subquery

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Membership, Role
from memories.items.models import REASON_MAX, ItemStatus, MemoryItem
from memories.items.versions import item_lock
from memories.review.decisions import memory_item_approve, memory_item_reject, risks_refusal, risks_unseen
from memories.review.policy_models import ReviewPolicy, ReviewVote, VoteDecision
from memories.review.seats import policy_lock, seat_take
from memories.review.selectors import REVIEWERS_DISAGREE as CONFLICT_PREFIX
from memories.trust.risk_models import RiskFinding
from memories.trust.risks import item_risks_pending
from reasoningbank_site.errors import Conflict, Invalid


@dataclass
class VoteOutcome:
    recorded: bool  # a vote was recorded (False: the decision was applied directly)
    votes: int  # votes on the item now
    required: int
    applied: str = ""  # "approve" / "reject" once the votes agreed (or the decision was direct)
    conflict: bool = False
    # All approved, but these reviewers voted before risk findings they have not confirmed: they approve again.
    unconfirmed: tuple[str, ...] = ()

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
    confirm_risks: bool | Collection[int] = False,
) -> VoteOutcome:
    """Record ``author``'s independent ``decision`` ("approve" or "reject", a reason required to reject) on
    the proposed ``item``. The last vote applies the decision when all agree (as ``author``, through
    memory_item_approve / memory_item_reject, which may raise DuplicateApproval), else marks the conflict
    in ``needs_review_reason``. Every approve vote sees the risk: on an item with unconfirmed risk findings
    it raises RisksNeedConfirmation (nothing recorded) unless ``confirm_risks`` (True, or the ids of all
    the findings the refusal named, as its dialog showed them), which records the findings
    ``author`` confirmed (ReviewVote.confirmed_findings) and audits them. The findings stay unconfirmed for
    serving until the votes decide, and they decide only when every approve vote confirmed every finding
    there is: a finding added after a vote marks the item for that reviewer, who approves again, confirming
    (the one case where a reviewer decides twice). Under a round-robin or claimed policy only the item's
    seat holders vote (memories.review.seats.seat_take, which claims a free place). Raises Invalid for
    another decision or a rejection without a reason, Conflict when the item is not proposed, already has
    all its votes, is not ``author``'s to decide, or ``author`` voted on it already."""
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
    votes = list(ReviewVote.objects.filter(item=item).select_related("user").order_by("created_at", "id"))
    pending = item_risks_pending(item) if decision == VoteDecision.APPROVE else []
    mine = next((v for v in votes if v.user_id == author.pk), None)
    if mine is not None and mine.decision == decision == VoteDecision.APPROVE and _unseen(mine, pending):
        _risks_confirm(mine, item=item, findings=_unseen(mine, pending), confirm=confirm_risks)
        return _outcome(item, votes, required, author=author, confirm_duplicate=confirm_duplicate)
    if len(votes) >= required:
        raise Conflict("This item has all the decisions it needs: an owner or admin resolves it.")
    if mine is not None:
        raise Conflict("You already decided on this item; the others' decisions are still to come.")
    seat_take(item=item, author=author, policy=policy)
    vote = ReviewVote(item=item, user=author, decision=decision, reason=reason)
    votes.append(vote)
    if pending:
        _risks_confirm(vote, item=item, findings=pending, confirm=confirm_risks)
    else:
        vote.save()
    return _outcome(item, votes, required, author=author, confirm_duplicate=confirm_duplicate)


def _unseen(vote: ReviewVote, pending: list[RiskFinding]) -> list[RiskFinding]:
    """The unconfirmed findings an approve ``vote`` has not confirmed (all of them, for a reject)."""
    return [f for f in pending if f.pk not in set(vote.confirmed_findings or ())]


def _risks_confirm(vote: ReviewVote, *, item: MemoryItem, findings: list[RiskFinding], confirm) -> None:
    """Save the approve ``vote`` as confirming ``findings`` (one audit event: who read which), or refuse
    with RisksNeedConfirmation when its reviewer did not ``confirm`` them all (True, or all their ids)."""
    if risks_unseen(findings, confirm):
        refusal = risks_refusal(item=item, findings=findings)
        refusal.vote = True  # the dialog says what a vote's confirmation does
        raise refusal
    vote.confirmed_findings = sorted({*(vote.confirmed_findings or ()), *(f.pk for f in findings)})
    vote.save()
    audit_record(
        action=AuditAction.MEMORY_ITEM_CONFIRM_RISKS,
        bank=item.bank,
        user=vote.user,
        obj=item,
        after={
            "vote": vote.decision,
            "findings": [{"kind": f.kind, "excerpt": f.excerpt, "step": f.step} for f in findings],
        },
    )


def _outcome(item: MemoryItem, votes: list[ReviewVote], required: int, *, author, confirm_duplicate: bool):
    """Apply what ``votes`` (saved, ``author``'s last) decide: nothing while some are missing; the agreed
    decision; or the review flag of a conflict, or of approve votes that did not confirm every finding."""
    if len(votes) < required:
        return VoteOutcome(recorded=True, votes=len(votes), required=required)
    decisions = {v.decision for v in votes}
    if len(decisions) > 1:
        item.needs_review_reason = votes_flag(votes=votes, required=required)
        item.save(update_fields=["needs_review_reason", "updated_at"])
        return VoteOutcome(recorded=True, votes=len(votes), required=required, conflict=True)
    (decision,) = decisions
    note = f"{required} of {required} reviewers agreed"
    if decision == VoteDecision.REJECT:
        reasons = "; ".join(v.reason for v in votes if v.reason)
        memory_item_reject(item=item, author=author, reason=f"{reasons} ({note})"[:REASON_MAX], agreed=True)
        return VoteOutcome(recorded=True, votes=len(votes), required=required, applied=decision)
    pending = item_risks_pending(item)
    behind = [v.user.get_username() for v in votes if _unseen(v, pending)]
    if behind:
        item.needs_review_reason = (
            f"All {required} reviewers approved, but risk findings appeared since: {' and '.join(behind)} "
            "must approve again, confirming them (or an owner or admin decides)."
        )[:REASON_MAX]
        item.save(update_fields=["needs_review_reason", "updated_at"])
        return VoteOutcome(recorded=True, votes=len(votes), required=required, unconfirmed=tuple(behind))
    # A refused approval (a near-duplicate to confirm) rolls the vote back with it, so it can be cast again.
    memory_item_approve(
        item=item,
        author=author,
        confirm_duplicate=confirm_duplicate,
        confirm_risks=True,  # each vote confirmed them all (checked just above)
        agreed=True,
        voters=[v.user for v in votes if v.user_id != author.pk],
    )
    return VoteOutcome(recorded=True, votes=len(votes), required=required, applied=decision)


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
