"""Reads behind the trajectory pages and the dashboard. Bounded queries only:
list pages defer the steps JSON, counts are grouped in one query each."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from accounts.models import Bank
from memories.models import ItemStatus, MemoryItem, MemoryItemVersion
from reasoningbank_site.text import pretty_json
from trajectories.models import Judgment, JudgmentSource, Status, Trajectory

# While a trajectory is in one of these, its detail page polls for new items.
IN_FLIGHT = {Status.RECEIVED, Status.JUDGING, Status.JUDGED, Status.DISTILLING}
LONG_TEXT = 600  # characters above which an observation is collapsed


def trajectory_list(
    *, bank: Bank, status: str = "", verdict: str = "", agent: str = "", text: str = ""
) -> QuerySet[Trajectory]:
    """Trajectories of ``bank``, newest first, without their steps."""
    qs = Trajectory.objects.filter(bank=bank).defer("steps", "metadata")
    if status:
        qs = qs.filter(status=status)
    if verdict == "none":
        qs = qs.filter(verdict="")
    elif verdict:
        qs = qs.filter(verdict=verdict)
    if agent:
        qs = qs.filter(agent=agent)
    text = (text or "").strip()
    if text:
        qs = qs.filter(Q(task__icontains=text) | Q(final_answer__icontains=text) | Q(task_id=text))
    return qs.order_by("-created_at", "-id")


def trajectory_for_bank(*, bank: Bank, public_id) -> Trajectory:
    """One trajectory of ``bank``; raises Trajectory.DoesNotExist otherwise."""
    return Trajectory.objects.select_related("bank", "token").get(bank=bank, public_id=public_id)


def trajectory_judgments(*, trajectory: Trajectory) -> list[Judgment]:
    return list(trajectory.judgments.select_related("author").order_by("created_at", "id"))


def trajectory_items(*, trajectory: Trajectory) -> list[MemoryItem]:
    """Items derived from ``trajectory``: those citing it, plus those of its
    experience; newest first."""
    cond = Q(cited_steps__contains=[{"trajectory": str(trajectory.public_id)}])
    if trajectory.experience_id:
        cond |= Q(experience_id=trajectory.experience_id)
    return list(MemoryItem.objects.filter(cond, bank_id=trajectory.bank_id).order_by("-created_at", "-id"))


def cited_step_indexes(*, trajectory: Trajectory, items: list[MemoryItem]) -> dict[int, list[MemoryItem]]:
    """step index → the items that cite it (only items citing this trajectory)."""
    tid = str(trajectory.public_id)
    cited: dict[int, list[MemoryItem]] = {}
    for item in items:
        for cite in item.cited_steps or []:
            if isinstance(cite, dict) and str(cite.get("trajectory")) == tid:
                try:
                    index = int(cite.get("step"))
                except (TypeError, ValueError):
                    continue
                cited.setdefault(index, [])
                if item not in cited[index]:
                    cited[index].append(item)
    return cited


@dataclass
class StepView:
    index: int
    kind: str
    content: str
    name: str = ""
    arguments: str = ""
    call_id: str = ""
    is_error: bool = False
    long: bool = False
    cited_by: list = field(default_factory=list)


def _pretty_arguments(raw) -> str:
    return pretty_json(raw)  # depth-limited: deeply nested agent JSON is shown raw, never a RecursionError


def step_views(*, trajectory: Trajectory, cited: dict[int, list] | None = None) -> list[StepView]:
    """The stored steps as display records. Tolerates odd shapes (steps are
    agent input): non-dicts become a single 'content' string."""
    cited = cited or {}
    views = []
    for position, raw in enumerate(trajectory.steps or []):
        if not isinstance(raw, dict):
            raw = {"kind": "step", "content": pretty_json(raw)}
        try:
            index = int(raw.get("index", position))
        except (TypeError, ValueError):
            index = position
        content = raw.get("content", "")
        if not isinstance(content, str):
            content = pretty_json(content)
        kind = str(raw.get("kind") or "step")
        views.append(
            StepView(
                index=index,
                kind=kind,
                content=content,
                name=str(raw.get("name") or ""),
                arguments=_pretty_arguments(raw.get("arguments")),
                call_id=str(raw.get("call_id") or ""),
                is_error=bool(raw.get("is_error")),
                long=kind in ("observation", "tool_result", "system") and len(content) > LONG_TEXT,
                cited_by=cited.get(index, []),
            )
        )
    return views


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

    from django.db.models import Subquery

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


def trajectory_agents(*, bank: Bank) -> list[str]:
    """Agent names of the latest 5,000 trajectories (bounded for large banks)."""
    recent = Trajectory.objects.filter(bank=bank).order_by("-created_at").values("pk")[:5000]
    return sorted(
        set(Trajectory.objects.filter(pk__in=recent).exclude(agent="").values_list("agent", flat=True).distinct()[:200])
    )
