"""Who decides on an item when a bank needs several decisions per item and
its policy distributes them (memories.review.policy_models.Distribution):

- round-robin: each proposed item is dealt to ``decisions_required`` of the
  team's reviewers in turn; only they decide on it;
- claimed: reviewers claim items, up to ``decisions_required`` per item;
  a decision on an item with a free place claims it on the way.

Either way an item's places are ReviewSeat rows; owners and admins decide
outright, seat or not (that is how they resolve conflicts and stuck items).
Items are dealt when someone opens the queue or an item, so an item
distilled while nobody looks is dealt on the next look."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, Exists, OuterRef
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.models import Bank, Membership, Role
from memories.items.models import ItemStatus, MemoryItem
from memories.items.versions import item_lock
from memories.review.policy_models import Distribution, ReviewPolicy, ReviewSeat, ReviewVote, SeatSource
from reasoningbank_site.errors import Conflict, Invalid, NotFound
from reasoningbank_site.text import counted

DEAL_BATCH = 500  # items dealt per look; a larger backlog is dealt over the next looks
# How far before the last whole deal a look goes back: an item distilled while a deal ran commits after it.
DEAL_OVERLAP = timedelta(minutes=10)
CLAIM_NEXT_MAX = 50


def team_voters(*, bank: Bank) -> list[int]:
    """The user ids whose approve/reject on ``bank`` is a vote: its team's reviewers, in the order they joined
    (owners and admins decide outright)."""
    return list(
        Membership.objects.filter(team_id=bank.team_id, role=Role.REVIEWER)
        .order_by("id")
        .values_list("user", flat=True)
    )


def _names(seats) -> str:
    names = sorted(seat.user.get_username() for seat in seats)
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + f" and {names[-1]}"


def policy_lock(*, bank: Bank) -> ReviewPolicy:
    """``bank``'s review policy, its row locked (the defaults, unsaved, when it has none). Whoever deals or
    takes places locks the policy before any item, so a deal and a vote never wait on each other."""
    return ReviewPolicy.objects.select_for_update().filter(bank=bank).first() or ReviewPolicy(bank=bank)


def _drop_departed(items, voters: list[int]) -> None:
    """Free the places on ``items`` held by members who are no longer reviewers and have not decided."""
    decided = ReviewVote.objects.filter(item=OuterRef("item"), user=OuterRef("user"))
    ReviewSeat.objects.filter(item__in=items).exclude(user__in=voters).exclude(Exists(decided)).delete()


@transaction.atomic
def review_deal(*, bank: Bank, only: MemoryItem | None = None, skip_user=None, full: bool = False) -> int:
    """Deal ``bank``'s proposed items that lack places (``only`` that one) to its reviewers in turn, when its
    policy is round-robin; places of members who are no longer reviewers, and have not decided, are dealt
    again. ``skip_user`` is left out of this deal (who just passed the item on). Once the whole backlog is
    dealt, a later look deals only the items changed since (with an overlap), until the team's reviewers
    change or ``full`` is asked (a changed policy). Returns the places dealt."""
    now = timezone.now()
    policy = ReviewPolicy.objects.select_for_update().filter(bank=bank, distribution=Distribution.ROUND_ROBIN).first()
    if policy is None or policy.decisions_required < 2:
        return 0
    voters = team_voters(bank=bank)
    proposed = MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED)
    changes_only = only is None and not full and policy.dealt_at is not None and policy.dealt_voters == voters
    if only is not None:
        proposed = proposed.filter(pk=only.pk)
    elif changes_only:  # the same reviewers as at the last whole deal: nobody's places are to free
        proposed = proposed.filter(updated_at__gte=policy.dealt_at - DEAL_OVERLAP)
    if not changes_only:
        _drop_departed(proposed, voters)
    rotation = [uid for uid in voters if skip_user is None or uid != skip_user.pk]
    need = min(policy.decisions_required, len(rotation))
    if need == 0:
        return 0
    short = (
        proposed.annotate(seats=Count("review_seats"))
        .filter(seats__lt=policy.decisions_required)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)[:DEAL_BATCH]
    )
    short = list(short)
    taken: dict[int, set[int]] = defaultdict(set)
    for item_id, user_id in ReviewSeat.objects.filter(item_id__in=short).values_list("item_id", "user_id"):
        taken[item_id].add(user_id)
    voted: dict[int, set[int]] = defaultdict(set)
    for item_id, user_id in ReviewVote.objects.filter(item_id__in=short).values_list("item_id", "user_id"):
        voted[item_id].add(user_id)
    cursor, dealt = policy.deal_cursor, []
    for item_id in short:
        seats = taken[item_id]
        # Who decided before the policy dealt the item keeps a place: their decision counts.
        dealt += [ReviewSeat(item_id=item_id, user_id=uid, source=SeatSource.DEALT) for uid in voted[item_id] - seats]
        seats |= voted[item_id]
        for _ in range(len(rotation)):
            if len(seats) >= policy.decisions_required or len(seats & set(rotation)) >= need:
                break
            uid = rotation[cursor % len(rotation)]
            cursor += 1
            if uid not in seats:
                seats.add(uid)
                dealt.append(ReviewSeat(item_id=item_id, user_id=uid, source=SeatSource.DEALT))
    if not dealt and only is not None:
        return 0  # one item, its places all held: a look at it writes nothing
    ReviewSeat.objects.bulk_create(dealt, ignore_conflicts=True)
    policy.deal_cursor = cursor % len(rotation)
    fields = ["deal_cursor"]
    if only is None and len(short) < DEAL_BATCH:  # nothing left undealt: later looks deal only what changes
        policy.dealt_at, policy.dealt_voters = now, voters
        fields += ["dealt_at", "dealt_voters"]
    policy.save(update_fields=fields)
    return len(dealt)


def dealt_places_free(*, policy: ReviewPolicy) -> int:
    """Free the places round-robin dealt on ``policy``'s bank's proposed items that their holders have not
    decided on (a decision keeps its place: it counts), and forget the last whole deal, so a later round-robin
    deals everything again. The caller holds the policy's lock. Returns how many places were freed."""
    decided = ReviewVote.objects.filter(item=OuterRef("item"), user=OuterRef("user"))
    freed, _ = (
        ReviewSeat.objects.filter(
            item__bank_id=policy.bank_id, item__status=ItemStatus.PROPOSED, source=SeatSource.DEALT
        )
        .exclude(Exists(decided))
        .delete()
    )
    policy.dealt_at, policy.dealt_voters = None, []
    policy.save(update_fields=["dealt_at", "dealt_voters"])
    return freed


def seat_take(*, item: MemoryItem, author, policy: ReviewPolicy) -> None:
    """Before ``author``'s vote on ``item`` (the caller holds policy_lock, then the item's lock): under a seated policy, check that the item
    is theirs to decide, claiming a free place under a claimed policy. Raises Conflict naming who holds it."""
    if not policy.seated:
        return
    if policy.distribution == Distribution.ROUND_ROBIN:
        review_deal(bank=item.bank, only=item)
    seats = list(ReviewSeat.objects.filter(item=item).select_related("user"))
    if any(seat.user_id == author.pk for seat in seats):
        return
    if policy.distribution == Distribution.ROUND_ROBIN:
        holders = f"dealt to {_names(seats)}" if seats else "not dealt to anyone yet"
        raise Conflict(f"This item is {holders}: it is theirs to decide. Pick one dealt to you (Assigned to me).")
    if len(seats) >= policy.decisions_required:
        raise Conflict(f"This item is claimed by {_names(seats)}, all the decisions it needs: pick another item.")
    if author.pk not in team_voters(bank=item.bank):
        raise Conflict("Only the team's reviewers claim items; owners and admins decide outright.")
    ReviewSeat.objects.create(item=item, user=author, source=SeatSource.CLAIMED)


def _claim_policy(bank: Bank) -> ReviewPolicy:
    """``bank``'s policy, locked (policy_lock), when it distributes by claim; else Conflict."""
    policy = policy_lock(bank=bank)
    if not policy.seated or policy.distribution != Distribution.CLAIM:
        raise Conflict("This bank's items are not claimed: its review policy does not distribute them by claim.")
    return policy


@transaction.atomic
def review_claim(*, item: MemoryItem, user) -> ReviewSeat:
    """Claim a place on the proposed ``item`` for ``user`` (a reviewer of its team). Claiming twice is a
    no-op. Raises Conflict when the bank does not distribute by claim, the item is not proposed, or all its
    places are taken."""
    policy = _claim_policy(item.bank)
    item_lock(item)
    if item.status != ItemStatus.PROPOSED:
        raise Conflict(f"This item is {item.status}: there is nothing to claim.")
    _drop_departed(MemoryItem.objects.filter(pk=item.pk), team_voters(bank=item.bank))
    mine = ReviewSeat.objects.filter(item=item, user=user).first()
    if mine is not None:
        return mine
    seat_take(item=item, author=user, policy=policy)
    return ReviewSeat.objects.get(item=item, user=user)


@transaction.atomic
def review_claim_next(*, bank: Bank, user, count: int = 10) -> int:
    """Claim places on up to ``count`` (1 to CLAIM_NEXT_MAX) of ``bank``'s oldest proposed items that have a
    free place and that ``user`` neither holds nor decided. Returns how many were claimed. Raises Invalid for
    a count out of range, Conflict when the bank does not distribute by claim or ``user`` is not a reviewer."""
    policy = _claim_policy(bank)
    if not 1 <= count <= CLAIM_NEXT_MAX:
        raise Invalid(f"Claim from 1 to {CLAIM_NEXT_MAX} items at a time.")
    voters = team_voters(bank=bank)
    if user.pk not in voters:
        raise Conflict("Only the team's reviewers claim items; owners and admins decide outright.")
    proposed = MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED)
    _drop_departed(proposed, voters)
    free = (
        proposed.exclude(review_seats__user=user)
        .exclude(review_votes__user=user)
        .annotate(seats=Count("review_seats"))
        .filter(seats__lt=policy.decisions_required)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)
    )
    # Locked, skipping rows another reviewer is claiming now (they take other items rather than wait), and
    # counted again under the lock: a place may have gone between the two reads.
    locked = MemoryItem.objects.filter(pk__in=list(free[: count * 2])).order_by("created_at", "id")
    locked = list(locked.select_for_update(skip_locked=True).values_list("pk", flat=True))
    held = dict(
        ReviewSeat.objects.filter(item_id__in=locked)
        .values("item_id")
        .annotate(n=Count("*"))
        .values_list("item_id", "n")
    )
    ids = [pk for pk in locked if held.get(pk, 0) < policy.decisions_required][:count]
    seats = [ReviewSeat(item_id=pk, user=user, source=SeatSource.CLAIMED) for pk in ids]
    ReviewSeat.objects.bulk_create(seats, ignore_conflicts=True)
    return len(seats)


@transaction.atomic
def review_release(*, item: MemoryItem, holder, actor, actor_membership: Membership) -> None:
    """Give up ``holder``'s place on ``item`` (their own, or anyone's for an owner or admin), before they
    decide; under round-robin the item is dealt on to the next reviewer. Audited when an admin releases
    someone else's place. Raises NotFound for no such place, Conflict once ``holder`` has decided, Invalid
    for releasing another's place without being an owner or admin."""
    if holder.pk != actor.pk and not actor_membership.has_role(Role.ADMIN):
        raise Invalid("Only owners and admins release another reviewer's place.")
    policy_lock(bank=item.bank)
    item_lock(item)
    seat = ReviewSeat.objects.filter(item=item, user=holder).first()
    if seat is None:
        raise NotFound(f"{holder.get_username()} holds no place on this item.")
    if ReviewVote.objects.filter(item=item, user=holder).exists():
        raise Conflict(f"{holder.get_username()} has decided on this item: the decision stands.")
    seat.delete()
    if holder.pk != actor.pk:
        audit_record(
            action=AuditAction.REVIEW_SEAT_RELEASE,
            bank=item.bank,
            user=actor,
            obj=item,
            before={"holder": holder.get_username()},
        )
    if item.status == ItemStatus.PROPOSED:
        review_deal(bank=item.bank, only=item, skip_user=holder)


def item_seats(*, item: MemoryItem) -> list[ReviewSeat]:
    """``item``'s places, by who holds them."""
    return list(ReviewSeat.objects.filter(item=item).select_related("user").order_by("user__username"))


def seat_summary(*, policy: ReviewPolicy, voters: int) -> str:
    """The distribution in words for the policy page, warning when it cannot work."""
    if policy.decisions_required < 2:
        return "Each item needs one decision: any reviewer gives it."
    need = policy.decisions_required
    text = {
        Distribution.OPEN: f"Any {counted(need, 'reviewer')} decide, first come.",
        Distribution.ROUND_ROBIN: f"Each item is dealt to {counted(need, 'reviewer')} in turn; only they decide on it.",
        Distribution.CLAIM: f"Reviewers claim items, up to {need} per item; a decision on an unclaimed item claims it.",
    }[policy.distribution]
    if voters < need:
        text += (
            f" The team has {counted(voters, 'reviewer')} (owners and admins decide outright): items cannot get "
            f"{need} independent decisions until more reviewers join."
        )
    return text


def queue_seating(*, policy: ReviewPolicy, user) -> dict | None:
    """What the queue says about places under ``policy`` when it is seated (None otherwise, with no query):
    the distribution, how many items wait for ``user``'s decision, and whether ``user`` decides by vote."""
    if not policy.seated:
        return None
    waiting = (
        ReviewSeat.objects.filter(user=user, item__bank=policy.bank_id, item__status=ItemStatus.PROPOSED)
        .exclude(item__review_votes__user=user)
        .count()
    )
    voter = user.pk in team_voters(bank=policy.bank)
    return {
        "distribution": policy.distribution,
        "waiting": waiting,
        "voter": voter,
        "required": policy.decisions_required,
    }


def item_seating(*, item: MemoryItem, user, policy: ReviewPolicy) -> dict | None:
    """What the focus view says about ``item``'s places under ``policy`` (its bank's) when it is seated
    (None otherwise): who holds them (dealt or claimed), whether ``user`` may claim one, and whether
    ``user`` may give theirs up."""
    if not policy.seated or item.status != ItemStatus.PROPOSED:
        return None
    if policy.distribution == Distribution.ROUND_ROBIN:
        review_deal(bank=item.bank, only=item)
    seats = item_seats(item=item)
    mine = any(seat.user_id == user.pk for seat in seats)
    decided = set(ReviewVote.objects.filter(item=item).values_list("user_id", flat=True))
    for seat in seats:
        seat.decided = seat.user_id in decided
    claimable = (
        policy.distribution == Distribution.CLAIM
        and not mine
        and len(seats) < policy.decisions_required
        and user.pk in team_voters(bank=item.bank)
    )
    releasable = any(seat.user_id == user.pk and not seat.decided for seat in seats)  # a decision stands
    return {"distribution": policy.distribution, "seats": seats, "claimable": claimable, "releasable": releasable}
