"""Builders for the UI tests. Trajectories go through the ingestion service
(tests.factories.make_trajectory) and items through the real memories
services (``memory_item_propose`` embeds with the real model); the 30+-row
lists use bulk inserts because only the rendering is under test there."""

from __future__ import annotations

import pytest

from accounts.models import Role
from memories.models import ItemStatus, MemoryItem
from memories.services import experience_create, memory_item_propose
from tests import factories
from trajectories.models import Trajectory

STEPS = [
    {"index": 0, "kind": "user", "content": "Find the Sunday opening hours of the city library."},
    {"index": 1, "kind": "thought", "content": "Search the library site."},
    {
        "index": 2,
        "kind": "tool_call",
        "content": "",
        "name": "web_search",
        "arguments": '{"q": "city library hours", "n": 3}',
        "call_id": "c1",
    },
    {
        "index": 3,
        "kind": "tool_result",
        "content": "Mon-Sat 9-18, Sun 12-17 " + "x" * 900,
        "name": "web_search",
        "call_id": "c1",
    },
    {
        "index": 4,
        "kind": "tool_result",
        "content": "HTTP 503 from the catalogue",
        "name": "catalogue",
        "is_error": True,
    },
    {"index": 5, "kind": "answer", "content": "Sundays 12:00-17:00."},
]


def make_trajectory(bank, **fields) -> Trajectory:
    """A processed-looking trajectory (``done``, verdict ``success``, a tool
    error, a long observation) through ``tests.factories.make_trajectory``.
    ``steps`` given here are stored as given, since the pages must render any
    stored row inertly, including step kinds the API refuses."""
    if "steps" in fields:
        fields["stored_steps"] = fields.pop("steps")
    data = {
        "task": "Find the Sunday opening hours of the city library.",
        "steps": STEPS,
        "final_answer": "Sundays 12:00-17:00.",
        "agent": "web-agent",
        "status": "done",
        "verdict": "success",
        **fields,
    }
    return factories.make_trajectory(bank, **data)


def propose(bank, trajectory=None, *, title="Prefer the official source", steps=(2, 3), **kw) -> MemoryItem:
    experience = None
    if trajectory is not None:
        experience = trajectory.experience or experience_create(bank=bank, task=trajectory.task)
        if trajectory.experience_id is None:
            Trajectory.objects.filter(pk=trajectory.pk).update(experience=experience)
            trajectory.experience = experience
    return memory_item_propose(
        bank=bank,
        title=title,
        description=kw.pop("description", "Use when a schedule question comes up."),
        content=kw.pop("content", "Check the institution's own pages before answering."),
        origin=kw.pop("origin", "success"),
        experience=experience,
        cited_steps=[{"trajectory": str(trajectory.public_id), "step": s} for s in steps] if trajectory else [],
        verdict_label=kw.pop("verdict_label", "success"),
        **kw,
    )


def bulk_items(bank, n: int, status=ItemStatus.PROPOSED) -> list[MemoryItem]:
    return MemoryItem.objects.bulk_create(
        MemoryItem(
            bank=bank,
            title=f"Lesson {i}",
            description=f"When {i}",
            content=f"Do {i}",
            status=status,
            origin="failure",
            verdict_label="failure",
            near_duplicates=[{"id": "x", "similarity": 0.9}] if i % 3 == 0 else [],
        )
        for i in range(n)
    )


@pytest.fixture
def reviewer(team):
    return factories.make_member(team, Role.REVIEWER)


@pytest.fixture
def viewer(team):
    return factories.make_member(team, Role.VIEWER)


@pytest.fixture
def stranger(other_bank):
    """A member (owner even) of another team."""
    return other_bank.team.memberships.first().user


@pytest.fixture
def trajectory(bank):
    return make_trajectory(bank)


@pytest.fixture
def item(bank, trajectory):
    return propose(bank, trajectory)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Lets the browser fixture see whether the test failed (for its screenshot).
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)
