"""Reads behind a bank's dashboard: trajectories per status, judge/human
agreement, recent activity and the review backlog. Counts are grouped in one
query each."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q, Subquery

from accounts.models import Bank
from memories.models import ItemStatus, MemoryItem, MemoryItemVersion
from trajectories.models import Judgment, JudgmentSource, Status, Trajectory


def status_counts(*, bank: Bank) -> list[tuple[str, str, int]]:
    """(status, label, count) for every pipeline status, in pipeline order."""
    counts = dict(Trajectory.objects.filter(bank=bank).values_list("status").annotate(n=Count("id")).order_by())
    return [(value, label, counts.get(value, 0)) for value, label in Status.choices]


@dataclass
class Agreement:
    both: int  # trajectories with an llm and a human judgment
    agree: int

    @property
    def fraction(self) -> float | None:
        return self.agree / self.both if self.both else None


def judge_human_agreement(*, bank: Bank) -> Agreement:
    """Among trajectories judged by both the LLM and a human, how many have
    the same label in the latest LLM and the latest human judgment."""

    def latest(source):
        return (
            Judgment.objects.filter(trajectory=OuterRef("pk"), source=source)
            .order_by("-created_at", "-id")
            .values("label")[:1]
        )

    rows = (
        Trajectory.objects.filter(bank=bank)
        .filter(Exists(Judgment.objects.filter(trajectory=OuterRef("pk"), source=JudgmentSource.LLM)))
        .filter(Exists(Judgment.objects.filter(trajectory=OuterRef("pk"), source=JudgmentSource.HUMAN)))
        .annotate(llm=Subquery(latest(JudgmentSource.LLM)), human=Subquery(latest(JudgmentSource.HUMAN)))
        .values_list("llm", "human")
    )
    both = agree = 0
    for llm, human in rows.iterator():
        both += 1
        agree += llm == human
    return Agreement(both=both, agree=agree)


@dataclass
class Activity:
    when: object
    who: str
    what: str
    title: str
    kind: str  # "item" | "judgment" | "trajectory"
    public_id: str


def recent_activity(*, bank: Bank, limit: int = 12) -> list[Activity]:
    """The latest item actions, human/LLM judgments and arrivals, merged by time."""
    events: list[Activity] = []
    for v in (
        MemoryItemVersion.objects.filter(item__bank=bank)
        .select_related("author", "item")
        .only("action", "created_at", "author__username", "item__title", "item__public_id")
        .order_by("-created_at", "-id")[:limit]
    ):
        events.append(
            Activity(
                v.created_at,
                v.author.get_username() if v.author else "pipeline",
                v.action,
                v.item.title,
                "item",
                str(v.item.public_id),
            )
        )
    for j in (
        Judgment.objects.filter(trajectory__bank=bank)
        .select_related("author", "trajectory")
        .only("source", "label", "created_at", "author__username", "trajectory__task", "trajectory__public_id")
        .order_by("-created_at", "-id")[:limit]
    ):
        who = j.author.get_username() if j.author else j.get_source_display()
        events.append(
            Activity(
                j.created_at, who, f"judged {j.label}", j.trajectory.task[:120], "judgment", str(j.trajectory.public_id)
            )
        )
    for t in (
        Trajectory.objects.filter(bank=bank)
        .only("task", "agent", "created_at", "public_id")
        .order_by("-created_at", "-id")[:limit]
    ):
        events.append(
            Activity(
                t.created_at, t.agent or "agent", "sent a trajectory", t.task[:120], "trajectory", str(t.public_id)
            )
        )
    events.sort(key=lambda e: e.when, reverse=True)
    return events[:limit]


def review_backlog(*, bank: Bank) -> dict[str, int]:
    """Proposed items waiting for review, and approved items flagged for another look."""
    qs = MemoryItem.objects.filter(bank=bank)
    return qs.aggregate(
        proposed=Count("id", filter=Q(status=ItemStatus.PROPOSED)),
        flagged=Count("id", filter=Q(status=ItemStatus.APPROVED) & ~Q(needs_review_reason="")),
        approved=Count("id", filter=Q(status=ItemStatus.APPROVED)),
    )
