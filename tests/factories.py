"""Small builders for test data. They call the real services where one
exists, so tests exercise the same write path as the product."""

from __future__ import annotations

import itertools
from datetime import timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from accounts.models import Bank, Membership, Role, Team
from accounts.teams.banks import bank_create
from accounts.tokens.services import api_token_create
from memories.embedding.model import embedding_model_name, item_embedding_hash
from memories.items.experiences import experience_create
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_propose
from memories.serving.models import RetrievalEvent
from trajectories.ingest.record import trajectory_ingest
from trajectories.judging.verdicts import judgment_record, retrieval_outcomes_rebuild
from trajectories.models import Judgment, JudgmentSource, Trajectory
from trajectories.pipeline.tasks import trajectory_process_task
from trajectories.records.models import RawRecord, RetentionRun

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

# Four lessons a fleet of agents shares, as (title, description, content), and queries that each need two
# of them: the concurrent retrieval test and bench/retrieval_load.py serve the same bank.
FLEET_LESSONS = [
    ("Sign in before acting", "Use when the task needs an account.", "Log in first and confirm the session."),
    ("Walk every page", "Use when results span pages.", "Follow next until it disappears and collect each page."),
    ("Type dates directly", "Use when a form has a date picker.", "Type YYYY-MM-DD into the field."),
    ("Check the cart total", "Use before paying.", "Compare the cart total with the sum of item prices."),
]
FLEET_QUERIES = [
    "log into my account and list every page of my orders",
    "pick a date and check the cart total before paying",
    "sign in, then type the delivery date",
    "walk the paginated results and check the total price",
]

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
        RawRecord.objects.filter(pk=trajectory.pk).update(steps=stored_steps)
        trajectory.refresh_from_db()
        processed["step_count"] = len(stored_steps)
    if processed:
        Trajectory.objects.filter(pk=trajectory.pk).update(**processed)
        for key, value in processed.items():
            setattr(trajectory, key, value)
    return trajectory


def purge_raw(trajectory: Trajectory, *, days: int = 30, at=None) -> RetentionRun:
    """Purge ``trajectory``'s raw record (steps, final answer) as a retention run of its bank would: the record
    deleted and the run on record (at ``at``, default now, under ``days`` of retention)."""
    at = at or timezone.now()
    RawRecord.objects.filter(pk=trajectory.pk).delete()
    run = RetentionRun.objects.create(
        bank_id=trajectory.bank_id, ran_at=at, retention_days=days, created_before=at - timedelta(days=days), purged=1
    )
    if trajectory.created_at >= run.created_before:  # a recent run: purged as if it had been old enough
        RetentionRun.objects.filter(pk=run.pk).update(created_before=trajectory.created_at + timedelta(microseconds=1))
    trajectory.refresh_from_db()
    return run


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


# --- the review UI's scene ------------------------------------------------------------------
# Trajectories go through the ingestion service (``make_trajectory``) and items
# through the real memories services (``memory_item_propose`` embeds with the
# real model); the 30+-row lists use bulk inserts because only the rendering is
# under test there.

VIEW_STEPS = [
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


def make_done_trajectory(bank, **fields) -> Trajectory:
    """A processed-looking trajectory (``done``, verdict ``success``, a tool
    error, a long observation) through ``make_trajectory``.
    ``steps`` given here are stored as given, since the pages must render any
    stored row inertly, including step kinds the API refuses."""
    if "steps" in fields:
        fields["stored_steps"] = fields.pop("steps")
    data = {
        "task": "Find the Sunday opening hours of the city library.",
        "steps": VIEW_STEPS,
        "final_answer": "Sundays 12:00-17:00.",
        "agent": "web-agent",
        "status": "done",
        "verdict": "success",
        **fields,
    }
    return make_trajectory(bank, **data)


def propose_item(bank, trajectory=None, *, title="Prefer the official source", steps=(2, 3), **kw) -> MemoryItem:
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


# --- impact (trajectories.impact): retrievals by arm, with their trajectories ---------------


def with_holdout(bank, fraction=0.5):
    bank.holdout_fraction = fraction
    bank.save(update_fields=["holdout_fraction"])
    return bank


def make_items(bank, n, status=ItemStatus.APPROVED, **fields):
    return MemoryItem.objects.bulk_create(
        MemoryItem(bank=bank, title=f"Item {i}", description="d", content="c", status=status, **fields)
        for i in range(n)
    )


def make_arm(
    bank,
    arm,
    *,
    successes=0,
    failures=0,
    unjudged=0,
    items=(),
    unreported=0,
    days_ago=None,
    results=None,
    fraction=None,
    triggered=True,
):
    """Retrievals of ``arm`` (recording ``items``), each with one trajectory
    linked to it: ``successes`` + ``failures`` judged, ``unjudged`` not yet;
    plus ``unreported`` retrievals no trajectory came back for. Without
    ``items`` a retrieval still records one (untracked) candidate, so it is
    triggered, unless ``triggered`` is False; ``fraction`` is the holdout
    fraction it records (None: not recorded)."""
    recorded = results if results is not None else [{"id": str(i.public_id), "score": 0.8} for i in items]
    if results is None and not items and triggered:
        recorded = [{"id": "untracked-candidate", "score": 0.8}]
    verdicts = ["success"] * successes + ["failure"] * failures + [""] * unjudged
    events = RetrievalEvent.objects.bulk_create(
        RetrievalEvent(
            bank=bank, query=f"task {n}", mode="items", k=3, arm=arm, results=recorded, holdout_fraction=fraction
        )
        for n in range(len(verdicts) + unreported)
    )
    Trajectory.objects.bulk_create(
        Trajectory(bank=bank, task=f"task {n}", retrieval=event, verdict=verdict, status="done")
        for n, (event, verdict) in enumerate(zip(events, verdicts))
    )
    if days_ago is not None:
        RetrievalEvent.objects.filter(pk__in=[e.pk for e in events]).update(
            created_at=timezone.now() - timedelta(days=days_ago)
        )
    retrieval_outcomes_rebuild(bank=bank)  # bulk inserts bypass the services that keep the report's sums
    return events


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def approved_items_near(bank, query, n: int, spread: float, rng, **fields) -> list[MemoryItem]:
    """``n`` approved, embedded items of ``bank`` scattered around the unit
    vector ``query`` (``spread`` 0.3: right next to it; 2–3: far), in one
    insert: the HNSW tests' crowds. ``fields`` go on every item."""
    items = [
        MemoryItem(bank=bank, title=f"{spread} {i}", description="d", content="c", status=ItemStatus.APPROVED, **fields)
        for i in range(n)
    ]
    for item in items:
        item.embedding = unit(query + spread * rng.normal(size=384) / np.sqrt(384))
        item.embedding_hash = item_embedding_hash(item)
        item.embedding_model = embedding_model_name()
    return MemoryItem.objects.bulk_create(items)
