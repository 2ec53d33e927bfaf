"""Reads of how a bank learns after it serves: its policy, the environment an
item remembers, the refused lessons nearest to a task (shown to the
distiller), an item's repeats, and the review states that follow serving
(expired, stale, proposed for retirement, refused and repeated)."""

from __future__ import annotations

from typing import NamedTuple

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Now
from django.utils import timezone
from pgvector.django import CosineDistance

from accounts.models import Bank
from memories.items.models import ItemStatus, MemoryItem, MemoryItemSupport, SupportKind
from memories.learning.models import AGENT_VERSION_KEY, BankLearning

# What a list row reads to show an item's state and lifecycle badges (memories.items.lifecycle.lifecycle_of).
LIFECYCLE_FIELDS = (
    "valid_until",
    "stale_reason",
    "retirement_reason",
    "suspended",
    "status_reason",
    "archived_as_wrong",
    "superseded_by_id",
)


def bank_learning(*, bank: Bank) -> BankLearning:
    """``bank``'s learning policy: its row, else an unsaved one with the defaults (reading never writes)."""
    try:
        return BankLearning.objects.get(bank_id=bank.pk)
    except BankLearning.DoesNotExist:
        return BankLearning(bank=bank)


class LearningState(NamedTuple):
    """A bank's learning policy and whether it has refused lessons: what a distillation reads once."""

    learning: BankLearning
    has_refused: bool


def bank_learning_state(*, bank: Bank) -> LearningState:
    """``bank``'s LearningState in one query."""
    refused = MemoryItem.objects.filter(refused_q(), bank_id=OuterRef("pk"))
    row = (
        Bank.objects.filter(pk=bank.pk)
        .annotate(has_refused=Exists(refused))
        .select_related("learning")
        .only("pk", "learning")
        .first()
    )
    if row is None:
        return LearningState(BankLearning(bank=bank), False)
    try:
        learning = row.learning
    except BankLearning.DoesNotExist:
        learning = BankLearning(bank=bank)
    return LearningState(learning, row.has_refused)


def item_environment(*, agents, metadata, keys) -> dict:
    """What an item remembers of where it was learnt: the agent (when its
    sources name one), the agent's version (metadata ``agent_version``) and
    the bank's chosen metadata ``keys``, each from the first source that has
    it. Values are kept as sent (scalars; other values as their JSON)."""
    environment: dict = {}
    if len(agents) == 1:
        environment["agent"] = agents[0]
    for key in [AGENT_VERSION_KEY, *keys]:
        for entry in metadata:
            if isinstance(entry, dict) and key in entry and entry[key] is not None:
                environment[key] = environment_value(entry[key])
                break
    return environment


def environment_value(value) -> str:
    """One environment value as compared and shown: a string."""
    return value if isinstance(value, str) else str(value)


def refused_q(prefix: str = "") -> Q:
    """Items a reviewer refused: rejected, or archived as wrong."""
    return Q(**{f"{prefix}status": ItemStatus.REJECTED}) | Q(
        **{f"{prefix}status": ItemStatus.ARCHIVED, f"{prefix}archived_as_wrong": True}
    )


def refused_nearest(*, bank: Bank, vector, limit: int, exclude_task_id: str = "") -> list[MemoryItem]:
    """The up-to-``limit`` refused items of ``bank`` nearest to ``vector``,
    nearest first, with their reviewers' reasons (``status_reason``)."""
    if limit <= 0:
        return []
    qs = MemoryItem.objects.filter(refused_q(), bank=bank, embedding__isnull=False)
    if exclude_task_id:
        qs = qs.exclude(source_task_id=exclude_task_id)
    rows = qs.annotate(distance=CosineDistance("embedding", vector)).defer("embedding").order_by("distance")
    return list(rows[:limit])


def refused_exists(*, bank: Bank) -> bool:
    return MemoryItem.objects.filter(refused_q(), bank=bank).exists()


def item_repeats(*, item: MemoryItem) -> list[MemoryItemSupport]:
    """The times ``item``'s lesson was distilled again after a reviewer refused it, oldest first."""
    return list(MemoryItemSupport.objects.filter(item=item, kind=SupportKind.REPEATED).order_by("created_at", "id"))


class LifecycleState:
    """The review states that follow serving, each a queue filter."""

    REPEATED = "repeated"  # refused, and distilled again since
    EXPIRED = "expired"  # approved, past its validity: not served
    STALE = "stale"  # approved, learnt under an environment value since replaced
    RETIREMENT = "retirement"  # approved, proposed for retirement by Impact

    choices = (
        (REPEATED, "Refused, distilled again"),
        (EXPIRED, "Expired"),
        (STALE, "Stale"),
        (RETIREMENT, "Proposed for retirement"),
    )
    values = tuple(value for value, _ in choices)


def expired_q() -> Q:
    return Q(valid_until__isnull=False, valid_until__lte=Now())


def lifecycle_items(*, bank: Bank, state: str) -> QuerySet[MemoryItem]:
    """``bank``'s items in lifecycle ``state`` (LifecycleState); ValueError for another state."""
    items = MemoryItem.objects.filter(bank=bank)
    if state == LifecycleState.REPEATED:
        repeats = MemoryItemSupport.objects.filter(item=OuterRef("pk"), kind=SupportKind.REPEATED)
        return items.annotate(lc_repeated=Exists(repeats)).filter(refused_q(), lc_repeated=True)  # for its badge
    approved = items.filter(status=ItemStatus.APPROVED)
    if state == LifecycleState.EXPIRED:
        return approved.filter(expired_q())
    if state == LifecycleState.STALE:
        return approved.exclude(stale_reason="")
    if state == LifecycleState.RETIREMENT:
        return approved.exclude(retirement_reason="")
    raise ValueError(f"unknown lifecycle state {state!r}")


def item_expired(item: MemoryItem) -> bool:
    return item.valid_until is not None and item.valid_until <= timezone.now()
