"""Small builders for test data. They call the real services where one
exists, so tests exercise the same write path as the product."""

from __future__ import annotations

import itertools

from django.contrib.auth import get_user_model
from django.db import transaction

from accounts.models import Bank, Membership, Role, Team
from accounts.services import api_token_create, bank_create
from trajectories.models import Judgment, JudgmentSource, Trajectory
from trajectories.services import judgment_record, trajectory_ingest
from trajectories.tasks import trajectory_process_task

_seq = itertools.count(1)


def make_user(username: str | None = None, password: str = "pw-for-tests-only"):
    n = next(_seq)
    return get_user_model().objects.create_user(
        username=username or f"user{n}", email=f"user{n}@example.com", password=password
    )


def make_team(*, owner=None, slug: str | None = None) -> Team:
    n = next(_seq)
    team = Team.objects.create(name=f"Team {n}", slug=slug or f"team-{n}")
    if owner is not None:
        Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    return team


def make_member(team: Team, role: str = Role.VIEWER, user=None):
    user = user or make_user()
    Membership.objects.create(team=team, user=user, role=role)
    return user


def make_bank(*, team: Team | None = None, slug: str | None = None, **settings) -> Bank:
    n = next(_seq)
    return bank_create(team=team or make_team(), name=f"Bank {n}", slug=slug or f"bank-{n}", **settings)


def make_token(bank: Bank, scopes=("retrieve", "ingest"), **kwargs) -> str:
    """Create a token and return its secret, ready for an Authorization header."""
    return api_token_create(bank=bank, name=kwargs.pop("name", "test"), scopes=list(scopes), **kwargs).secret


# --- trajectories -------------------------------------------------------------------------

STEPS = [
    {"kind": "user", "content": "Find the opening hours of the city library on Sundays."},
    {"kind": "thought", "content": "I should search the library website."},
    {"kind": "tool_call", "content": "search", "name": "web_search", "arguments": '{"q": "city library hours"}'},
    {"kind": "tool_result", "content": "Library hours: Mon-Sat 9-18, Sun 12-17", "name": "web_search"},
    {"kind": "answer", "content": "Sundays 12:00-17:00."},
]


@transaction.atomic
def make_trajectory(
    bank: Bank,
    *,
    status: str | None = None,
    verdict: str | None = None,
    stored_steps: list[dict] | None = None,
    **data,
) -> Trajectory:
    """A trajectory sent to ``bank`` through ``trajectory_ingest`` (the API's
    write path: validation, normalization, agent signal, enqueueing after
    commit). ``data`` is the ingestion payload (task, steps or messages,
    final_answer, agent, group_id, outcome…), over a small default run.

    ``status`` / ``verdict`` put the row where the pipeline would have left it
    (e.g. ``done`` / ``success``) without running the pipeline and without a
    Judgment row: the UI tests that use them assert that a page starts with no
    judgment. They are set before the transaction commits, so the processing
    task enqueued on commit finds a finished row and leaves it alone. To give a
    trajectory a real judgment, use ``record_verdict``."""
    payload = {
        "task": "Find the opening hours of the city library on Sundays.",
        "steps": STEPS,
        "final_answer": "Sundays 12:00-17:00.",
        **data,
    }
    trajectory, _created = trajectory_ingest(bank=bank, token=None, data=payload)
    processed = {key: value for key, value in (("status", status), ("verdict", verdict)) if value is not None}
    if stored_steps is not None:
        processed.update(steps=stored_steps, step_count=len(stored_steps))
    if processed:
        Trajectory.objects.filter(pk=trajectory.pk).update(**processed)
        for key, value in processed.items():
            setattr(trajectory, key, value)
    return trajectory


def record_verdict(trajectory: Trajectory, label: str, *, source: str = JudgmentSource.LLM, **fields) -> Judgment:
    """Judge ``trajectory`` through ``judgment_record`` (which keeps its verdict in step)."""
    if source == JudgmentSource.LLM:
        fields.setdefault("prompt_version", "tests")
    return judgment_record(trajectory=trajectory, source=source, label=label, **fields)


def process_trajectory(trajectory: Trajectory) -> Trajectory:
    """Run the processing task on ``trajectory`` in this process (``Task.apply``:
    its retries run inline, countdowns skipped) and return it refreshed; a task
    that failed re-raises its error."""
    result = trajectory_process_task.apply(args=[trajectory.pk])
    if result.failed():
        raise result.result
    trajectory.refresh_from_db()
    return trajectory
