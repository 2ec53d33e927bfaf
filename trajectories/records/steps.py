"""Reads for long trajectories: one page of a trajectory's steps
under a filter (a step kind, its errors, its cited steps) with jumps to its
errors, cited steps and last step wherever they are; and a MaTTS group's
rollouts side by side with the contrast items distilled from them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator

from accounts.models import Bank
from memories.items.models import ItemOrigin, MemoryItem
from trajectories.models import Trajectory
from trajectories.records.selectors import StepView, cited_step_indexes, step_views

STEP_PAGE_SIZE = 50  # steps per page: a 600-step run is 12 pages, not one 54,000 px page
JUMPS_LISTED = 20  # jump links listed per kind (errors, cited); the filter shows them all
ERRORS = "errors"  # the filter values that are not step kinds
CITED = "cited"
GROUP_SHOWN = 24  # rollouts of a MaTTS group shown side by side (groups may declare up to 1,000)
KEY_STEPS = 6  # key steps listed per rollout on the group page


@dataclass
class Jump:
    """Where a step is shown: ``here`` on the page being rendered, else on the
    page the query string ``query`` opens (``kind=errors&page=2``)."""

    index: int
    here: bool
    query: str


@dataclass
class StepFilter:
    value: str
    label: str
    count: int
    active: bool

    @property
    def query(self) -> str:
        return _query(self.value, 1)


@dataclass
class StepPage:
    page: Page  # of StepView
    kind: str  # the filter in force ("" for every step)
    total: int
    filters: list[StepFilter]
    errors: list[Jump]
    error_count: int
    cited: list[Jump]
    cited_count: int
    last: Jump | None

    @property
    def previous_query(self) -> str | None:
        return _query(self.kind, self.page.previous_page_number()) if self.page.has_previous() else None

    @property
    def next_query(self) -> str | None:
        return _query(self.kind, self.page.next_page_number()) if self.page.has_next() else None


def _query(kind: str, page: int) -> str:
    return urlencode({key: value for key, value in (("kind", kind), ("page", page)) if value and value != 1})


def _matches(step: StepView, kind: str) -> bool:
    if kind == ERRORS:
        return step.is_error
    if kind == CITED:
        return bool(step.cited_by)
    return step.kind == kind


def _filters(steps: list[StepView], kind: str, errors: int, cited: int) -> list[StepFilter]:
    offered = [StepFilter("", "All steps", len(steps), not kind)]
    if errors or kind == ERRORS:
        offered.append(StepFilter(ERRORS, "Errors", errors, kind == ERRORS))
    if cited or kind == CITED:
        offered.append(StepFilter(CITED, "Cited", cited, kind == CITED))
    for name, count in Counter(s.kind for s in steps).items():  # in order of first appearance
        offered.append(StepFilter(name, name, count, kind == name))
    return offered


class _Locator:
    """Finds the page that shows a step: the one being rendered, else the
    filtered view's, else the unfiltered view's."""

    def __init__(self, steps: list[StepView], shown: list[StepView], kind: str, current: Page | None, size: int):
        self.size = size
        self.kind = kind
        self.on_page = {id(s) for s in current.object_list} if current is not None else set()
        self.in_all = {id(s): n for n, s in enumerate(steps)}
        self.in_shown = {id(s): n for n, s in enumerate(shown)} if kind else {}

    def jump(self, step: StepView) -> Jump:
        if id(step) in self.on_page:
            return Jump(step.index, True, "")
        if id(step) in self.in_shown:
            return Jump(step.index, False, _query(self.kind, self.in_shown[id(step)] // self.size + 1))
        return Jump(step.index, False, _query("", self.in_all[id(step)] // self.size + 1))


def step_page(
    *,
    trajectory: Trajectory,
    cited: dict[int, list] | None = None,
    kind: str = "",
    page=None,
    around: int | None = None,
    size: int = STEP_PAGE_SIZE,
) -> StepPage:
    """Page ``page`` (any junk: the first; past the end: the last) of the steps
    of ``trajectory`` that pass ``kind``: a step kind, ``errors`` or
    ``cited``; anything else shows every step. Without ``page``, the page
    holding step ``around`` when it passes the filter."""
    steps = step_views(trajectory=trajectory, cited=cited)
    if kind not in (ERRORS, CITED) and not any(s.kind == kind for s in steps):
        kind = ""
    shown = [s for s in steps if _matches(s, kind)] if kind else steps
    paginator = Paginator(shown, size)
    if page is None and around is not None:
        position = next((n for n, s in enumerate(shown) if s.index == around), None)
        page = position // size + 1 if position is not None else None
    current = paginator.get_page(page)
    locate = _Locator(steps, shown, kind, current, size)
    errors = [s for s in steps if s.is_error]
    cited_steps = [s for s in steps if s.cited_by]
    return StepPage(
        page=current,
        kind=kind,
        total=len(steps),
        filters=_filters(steps, kind, len(errors), len(cited_steps)),
        errors=[locate.jump(s) for s in errors[:JUMPS_LISTED]],
        error_count=len(errors),
        cited=[locate.jump(s) for s in cited_steps[:JUMPS_LISTED]],
        cited_count=len(cited_steps),
        last=locate.jump(steps[-1]) if steps else None,
    )


# ---------------------------------------------------------------------------
# A MaTTS group side by side
# ---------------------------------------------------------------------------


@dataclass
class KeyStep:
    step: StepView
    jump: Jump  # on the member's detail page (never ``here``)
    why: str  # "error", "cited", "last"


@dataclass
class Rollout:
    trajectory: Trajectory
    key_steps: list[KeyStep]
    error_count: int
    cited_count: int


@dataclass
class ContrastItem:
    item: MemoryItem
    cites: list[tuple[int, Trajectory, int]]  # (rollout number, member, step index) of the rollouts shown


@dataclass
class GroupView:
    group_id: str
    task: str
    declared: int | None  # the group size its first member declared
    members: int  # every member, also those not shown
    rollouts: list[Rollout]
    items: list[ContrastItem]  # the contrast items distilled from the group, oldest first
    verdicts: dict[str, int] = field(default_factory=dict)


def _key_steps(trajectory: Trajectory, cited: dict[int, list]) -> tuple[list[KeyStep], int, int]:
    steps = step_views(trajectory=trajectory, cited=cited)
    locate = _Locator(steps, steps, "", None, STEP_PAGE_SIZE)
    errors = [s for s in steps if s.is_error]
    cited_steps = [s for s in steps if s.cited_by]
    chosen: dict[int, KeyStep] = {}
    for why, among in (("cited", cited_steps), ("error", errors)):
        for step in among:
            if len(chosen) >= KEY_STEPS - 1:
                break
            chosen.setdefault(id(step), KeyStep(step, locate.jump(step), why))
    if steps:
        chosen.setdefault(id(steps[-1]), KeyStep(steps[-1], locate.jump(steps[-1]), "last"))
    ordered = sorted(chosen.values(), key=lambda k: locate.in_all[id(k.step)])
    return ordered, len(errors), len(cited_steps)


def trajectory_group(*, bank: Bank, group_id: str) -> GroupView:
    """The MaTTS group ``group_id`` of ``bank``: its first ``GROUP_SHOWN``
    members (oldest first) with their key steps (cited by the group's
    contrast items, errors, the last step), and the contrast items
    (origin matts-parallel) distilled under the members' experience."""
    members_qs = (
        Trajectory.objects.filter(bank=bank, group_id=group_id).select_related("raw").order_by("created_at", "pk")
    )
    members = list(members_qs[:GROUP_SHOWN])
    experiences = set(members_qs.exclude(experience=None).values_list("experience_id", flat=True))
    items = (
        list(
            MemoryItem.objects.filter(bank=bank, experience_id__in=experiences, origin=ItemOrigin.MATTS_PARALLEL)
            .defer("embedding")
            .order_by("created_at", "id")
        )
        if experiences
        else []
    )
    rollouts = []
    for member in members:
        key_steps, errors, cited = _key_steps(member, cited_step_indexes(trajectory=member, items=items))
        rollouts.append(Rollout(member, key_steps, errors, cited))
    numbered = {str(m.public_id): (n, m) for n, m in enumerate(members, start=1)}
    contrast = [
        ContrastItem(
            item,
            [
                (*numbered[str(c.get("trajectory"))], c["step"])
                for c in item.cited_steps or []
                if isinstance(c, dict) and str(c.get("trajectory")) in numbered and isinstance(c.get("step"), int)
            ],
        )
        for item in items
    ]
    verdicts = Counter(verdict or "none" for verdict in members_qs.values_list("verdict", flat=True))
    return GroupView(
        group_id=group_id,
        task=members[0].task if members else "",
        declared=next((m.group_size for m in members if m.group_size), None),
        members=members_qs.count(),
        rollouts=rollouts,
        items=contrast,
        verdicts=dict(verdicts),
    )
