"""Reads of trajectories: one, a filtered list, its judgments, the items
derived from it, and its steps as display records. Lists defer the steps JSON."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.db.models import Prefetch, QuerySet

from accounts.models import Bank
from memories.items.models import MemoryItem, SupportKind
from memories.review.selectors import agent_judge_disagree, review_agents
from reasoningbank_site.search import text_search
from reasoningbank_site.text import pretty_json
from trajectories.models import Judgment, Status, Trajectory, trajectory_search_vector

# While a trajectory is in one of these, its detail page polls for new items.
IN_FLIGHT = {Status.RECEIVED, Status.JUDGING, Status.JUDGED, Status.DISTILLING}
LONG_TEXT = 600  # characters above which a step (all but the answer) is collapsed
LONG_LINES = 15  # or lines


def trajectory_get_for_bank(*, bank: Bank, public_id: str | uuid.UUID) -> Trajectory:
    """The trajectory ``public_id`` of ``bank``, with its judgments prefetched
    (oldest first). Raises Trajectory.DoesNotExist for an unknown id, a
    malformed one, or another bank's trajectory — callers answer all with 404."""
    try:
        key = public_id if isinstance(public_id, uuid.UUID) else uuid.UUID(str(public_id))
    except (ValueError, AttributeError, TypeError):
        raise Trajectory.DoesNotExist(f"no trajectory {public_id!r}") from None
    return (
        Trajectory.objects.filter(bank=bank, public_id=key)
        .defer("metadata")
        .prefetch_related(Prefetch("judgments", queryset=Judgment.objects.order_by("created_at", "id")))
        .get()
    )


def trajectory_derived_items(*, trajectory: Trajectory, newest_first: bool = False) -> list[MemoryItem]:
    """The memory items derived from ``trajectory``: those distilled under its
    experience (a MaTTS group member shares its group's), which is also what a
    relabel supersedes or flags. Oldest first unless ``newest_first``; one
    query, none when the trajectory has no experience yet."""
    if trajectory.experience_id is None:
        return []
    order = ("-created_at", "-id") if newest_first else ("created_at", "id")
    return list(
        MemoryItem.objects.filter(bank_id=trajectory.bank_id, experience_id=trajectory.experience_id)
        .defer("embedding")
        .order_by(*order)
    )


def trajectory_supported_items(*, trajectory: Trajectory) -> list[MemoryItem]:
    """The items the bank already held that ``trajectory``'s distillation found
    again: recorded as supporting evidence on them (MemoryItemSupport of its
    experience) instead of becoming new proposals. Oldest first; one query,
    none when the trajectory has no experience yet."""
    if trajectory.experience_id is None:
        return []
    return list(
        MemoryItem.objects.filter(
            bank_id=trajectory.bank_id,
            supports__experience_id=trajectory.experience_id,
            supports__kind=SupportKind.DISTILLED,
        )
        .distinct()
        .defer("embedding")
        .order_by("created_at", "id")
    )


# What a row of the trajectory list shows (a row reading another field would cost a query per row).
LIST_FIELDS = (
    "id",
    "public_id",
    "bank_id",
    "task",
    "agent",
    "group_id",
    "status",
    "status_detail",
    "verdict",
    "outcome",
    "step_count",
    "created_at",
)


def trajectory_list(
    *, bank: Bank, status: str = "", verdict: str = "", agent: str = "", text: str = "", disagree: bool = False
) -> QuerySet[Trajectory]:
    """Trajectories of ``bank``, newest first: the columns the list shows (no steps, answer or metadata).
    ``disagree``: only those whose agent reported one outcome and whose verdict says the other (the
    dashboard counts this list)."""
    qs = Trajectory.objects.filter(bank=bank).only(*LIST_FIELDS)
    if disagree:
        qs = qs.filter(agent_judge_disagree())
    if status:
        qs = qs.filter(status=status)
    if verdict == "none":
        qs = qs.filter(verdict="")
    elif verdict:
        qs = qs.filter(verdict=verdict)
    if agent:
        qs = qs.filter(agent=agent)
    qs = text_search(qs, trajectory_search_vector(), text)
    return qs.order_by("-created_at", "-id")


def trajectory_for_bank(*, bank: Bank, public_id) -> Trajectory:
    """One trajectory of ``bank``; raises Trajectory.DoesNotExist otherwise."""
    return Trajectory.objects.select_related("bank", "token").get(bank=bank, public_id=public_id)


def trajectory_judgments(*, trajectory: Trajectory) -> list[Judgment]:
    return list(trajectory.judgments.select_related("author").order_by("created_at", "id"))


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
    duration: str = ""  # how long the step took ("840 ms", "2.4 s"), when the source recorded it
    cited_by: list = field(default_factory=list)


def _duration(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return ""
    return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.1f} s"


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
                # depth-limited: deeply nested agent JSON is shown raw, never a RecursionError
                arguments=pretty_json(raw.get("arguments")),
                call_id=str(raw.get("call_id") or ""),
                is_error=bool(raw.get("is_error")),
                long=kind != "answer" and (len(content) > LONG_TEXT or content.count("\n") >= LONG_LINES),
                duration=_duration(raw.get("duration_ms")),
                cited_by=cited.get(index, []),
            )
        )
    return views


def trajectory_agents(*, bank: Bank) -> list[str]:
    """Agent names of the latest 5,000 trajectories (bounded for large banks;
    the same list as the review queue's filter)."""
    return review_agents(bank=bank)
