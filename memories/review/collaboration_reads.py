"""What the review pages read about the other reviewers: the version each row
was shown at, who has an item open, which slices of the queue are whose."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Bank, Role
from memories.items.models import ItemStatus, MemoryItem, MemoryItemVersion
from memories.review.models import ReviewAssignment, ReviewPresence
from memories.review.policy_models import ReviewSeat

# How long a focus view counts as open after its last heartbeat (the page beats every 15 s).
PRESENCE_EXPIRY_SECONDS = 45


def item_present_reviewers(*, items: Iterable[MemoryItem], exclude_user=None) -> dict[int, list[str]]:
    """Who else (by username) has each item open in the focus view now: a
    heartbeat within the last PRESENCE_EXPIRY_SECONDS. One query."""
    since = timezone.now() - timedelta(seconds=PRESENCE_EXPIRY_SECONDS)
    qs = ReviewPresence.objects.filter(item_id__in=[i.pk for i in items], last_seen__gte=since)
    if exclude_user is not None:
        qs = qs.exclude(user=exclude_user)
    present: dict[int, list[str]] = defaultdict(list)
    for item_id, username in qs.order_by("user__username").values_list("item_id", "user__username"):
        present[item_id].append(username)
    return dict(present)


def bank_assignments(*, bank: Bank) -> list[ReviewAssignment]:
    """The bank's slices, oldest first, with their reviewer and listed items' ids."""
    return list(
        ReviewAssignment.objects.filter(bank=bank)
        .select_related("reviewer", "created_by")
        .prefetch_related("items")
        .order_by("created_at", "id")
    )


def assignment_q(assignment: ReviewAssignment) -> Q:
    """The items of the slice as a filter over MemoryItem (the queue adds "proposed")."""
    listed = Q(pk__in=[i.pk for i in assignment.items.all()])
    if not assignment.has_criteria:
        return listed if assignment.items.all() else Q()
    q = Q()
    if assignment.origin:
        q &= Q(origin=assignment.origin)
    if assignment.verdict:
        q &= Q(verdict_label=assignment.verdict)
    if assignment.agent:
        q &= Q(source_agents__contains=[assignment.agent])
    if assignment.tag:
        q &= Q(tags__contains=[assignment.tag])
    return q | listed


def queue_assigned_to(queue: QuerySet[MemoryItem], *, assignments: list[ReviewAssignment], user) -> QuerySet:
    """``queue`` narrowed to the slices given to ``user`` and the items whose places ``user`` holds (dealt
    or claimed: memories.review.seats) and has not decided yet; nothing when there are none."""
    mine = [a for a in assignments if a.reviewer_id == user.pk]
    q = Q(pk__in=ReviewSeat.objects.filter(user=user).exclude(item__review_votes__user=user).values("item"))
    for a in mine:
        part = assignment_q(a)
        if not part:  # the whole queue
            return queue
        q |= part
    return queue.filter(q)


def queue_rows_read_along(queue: QuerySet[MemoryItem], *, user) -> QuerySet[MemoryItem]:
    """``queue`` reading with each row what the reviewers see: ``seen_version``
    (the current version, sent back with a decision) and ``reviewed_by`` (the
    others who have it open): two subqueries per row, answered from their
    indexes, instead of two more queries. The
    queue's page and a row answering a decision are both read through it."""
    since = timezone.now() - timedelta(seconds=PRESENCE_EXPIRY_SECONDS)
    current = MemoryItemVersion.objects.filter(item=OuterRef("pk")).order_by("-number").values("number")[:1]
    present = (
        ReviewPresence.objects.filter(item=OuterRef("pk"), last_seen__gte=since)
        .exclude(user=user)
        .order_by("user__username")
        .values("user__username")
    )
    return queue.annotate(seen_version=Coalesce(Subquery(current), 0), reviewed_by=ArraySubquery(present))


def queue_rows_annotate(*, items: list[MemoryItem], assignments: list[ReviewAssignment], seats: bool = False) -> None:
    """Set on each queue row (read through ``queue_rows_read_along``, which
    gives it ``seen_version`` and ``reviewed_by``) its ``assignees``: the reviewers given a slice holding it,
    and with ``seats`` (a round-robin or claimed policy) those holding a place on it."""
    assignees: dict[int, set[str]] = defaultdict(set)
    # A decided item is no one's to review any more: its old places and slices are not named on its row.
    ids = [item.pk for item in items if item.status == ItemStatus.PROPOSED]
    places = ReviewSeat.objects.filter(item_id__in=ids) if seats else ReviewSeat.objects.none()
    for pk, username in places.values_list("item_id", "user__username"):
        assignees[pk].add(username)
    for a in assignments:  # one query per slice (a bank has a few), the same rule as the filter
        for pk in MemoryItem.objects.filter(pk__in=ids).filter(assignment_q(a)).values_list("pk", flat=True):
            assignees[pk].add(a.reviewer.get_username())
    for item in items:
        item.assignees = sorted(assignees.get(item.pk, ()))


def team_reviewers(*, bank: Bank) -> QuerySet:
    """The users who may be given a slice of ``bank``'s queue (reviewers and above), by username."""
    roles = [Role.REVIEWER, Role.ADMIN, Role.OWNER]
    return (
        get_user_model()
        .objects.filter(memberships__team_id=bank.team_id, memberships__role__in=roles)
        .order_by("username")
    )
