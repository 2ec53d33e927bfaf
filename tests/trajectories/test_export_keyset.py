"""The trajectory exports read the bank a chunk at a time, each chunk an index
range read after the last row (not one server-side cursor that PostgreSQL runs
to its end before the first row), with the same content in the same order."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memories.items.models import MemoryItem
from memories.trust.models import VerdictTier
from reasoningbank_site import search_paging
from reasoningbank_site.keyset import keyset_page
from tests import factories
from trajectories.exports import datasets
from trajectories.judging.verdicts import trajectory_relabel
from trajectories.models import Judgment, JudgmentSource, Trajectory


def _rows(client, bank, name: str, **query) -> list[dict]:
    response = client.get(reverse(f"trajectories:export_{name}", kwargs={"bank_id": bank.public_id}), query)
    assert response.status_code == 200
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


@pytest.fixture
def eleven(bank, owner):
    """Eleven judged runs, four of them stamped with the same moment (ties broken by id), each judged by the LLM,
    every other one also by a human."""
    runs = []
    for i in range(11):
        run = factories.make_done_trajectory(bank, verdict="", task=f"Task {i}")
        factories.record_verdict(run, ("success", "failure")[i % 2], prompt_version="judge/v1", model="m1")
        if i % 2 == 0:
            factories.record_verdict(run, "success", source=JudgmentSource.HUMAN, author=owner, rationale=f"ok {i}")
        runs.append(run)
    same = timezone.now() - timedelta(days=1)
    Trajectory.objects.filter(pk__in=[r.pk for r in runs[3:7]]).update(created_at=same)
    return runs


def test_an_export_read_in_small_chunks_equals_the_export_read_in_one(client, owner, bank, eleven, monkeypatch):
    client.force_login(owner)
    whole = {name: _rows(client, bank, name, **q) for name, q in (("chat", {"verdict": "all"}), ("judge_eval", {}))}
    in_order = [
        str(p)
        for p in Trajectory.objects.filter(bank=bank).order_by("created_at", "id").values_list("public_id", flat=True)
    ]
    assert [r["metadata"]["trajectory_id"] for r in whole["chat"]] == in_order
    human = {str(r.public_id) for r in eleven[::2]}
    assert [r["trajectory_id"] for r in whole["judge_eval"]] == [p for p in in_order if p in human]
    monkeypatch.setattr(datasets, "CHUNK", 3)
    for name, query in (("chat", {"verdict": "all"}), ("judge_eval", {})):
        assert _rows(client, bank, name, **query) == whole[name]


def test_the_first_row_comes_from_a_bounded_query(client, owner, bank, eleven):
    rows = datasets.chat_finetune_rows(bank=bank, verdict="all")
    with CaptureQueriesContext(connection) as queries:
        next(rows)
    reads = [q["sql"] for q in queries if 'FROM "trajectories_trajectory"' in q["sql"]]
    assert reads and all("LIMIT 200" in sql for sql in reads), reads


@pytest.mark.django_db
def test_a_chunk_after_the_first_is_an_index_range_read_of_the_bank(bank, other_bank):
    for target in (bank, other_bank):
        Trajectory.objects.bulk_create(
            Trajectory(bank=target, task=f"t{i}", steps=[], verdict=("success", "failure")[i % 2]) for i in range(3000)
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE trajectories_trajectory")
        cursor.execute("ANALYZE trajectories_rawrecord")
    middle = Trajectory.objects.filter(bank=bank).order_by("created_at", "id")[1500]
    for verdict in ("success", "all"):
        qs = keyset_page(
            datasets.chat_trajectories(bank=bank, verdict=verdict),
            order=("created_at", "id"),
            after=(middle.created_at, middle.pk),
        )[: datasets.CHUNK]
        plan = qs.explain()
        assert "trajectory_bank_created_agent" in plan and "Limit" in plan, plan
        assert "Seq Scan on trajectories_trajectory" not in plan, plan


def test_the_export_page_counts_each_file_up_to_a_cap_and_says_so(client, owner, bank, eleven, monkeypatch):
    client.force_login(owner)
    url = reverse("trajectories:export", kwargs={"bank_id": bank.public_id})
    page = client.get(url).content.decode()
    assert 'Successes</a> <span class="muted small">(6)</span>' in page
    assert 'Failures</a> <span class="muted small">(5)</span>' in page
    assert "(6 runs)" in page  # the runs a reviewer also judged
    monkeypatch.setattr(search_paging, "LIST_COUNT_CAP", 5)
    page = client.get(url).content.decode()
    assert 'Successes</a> <span class="muted small">(5+)</span>' in page
    assert 'Failures</a> <span class="muted small">(5)</span>' in page
    assert "(5+ runs)" in page


@pytest.mark.django_db
def test_the_export_page_s_counts_stop_at_the_cap(bank):
    Trajectory.objects.bulk_create(
        Trajectory(bank=bank, task=f"t{i}", steps=[], verdict=("success", "failure")[i % 2]) for i in range(3000)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE trajectories_trajectory")
        cursor.execute("ANALYZE trajectories_rawrecord")
    runs = Trajectory.objects.filter(bank=bank, raw__isnull=False, verdict="success")
    plan = runs.order_by().values("pk")[: search_paging.LIST_COUNT_CAP + 1].explain()
    assert plan.lstrip().startswith("Limit"), plan


def test_the_judge_set_holds_every_run_a_human_judged_whatever_came_before_or_after(client, owner, bank, monkeypatch):
    """The set is read from the runs whose verdict tier is human: every write path that records a human
    judgment sets it, and no later judgment lowers it (an LLM judgment after the human's, a relabel)."""
    human_then_llm = factories.make_done_trajectory(bank, verdict="", task="Human first")
    factories.record_verdict(human_then_llm, "failure", source=JudgmentSource.HUMAN, author=owner)
    factories.record_verdict(human_then_llm, "success", prompt_version="judge/v1", model="m1")
    agent_llm_relabel = factories.make_done_trajectory(bank, verdict="", task="Agent, judge, reviewer")
    factories.record_verdict(agent_llm_relabel, "success", source=JudgmentSource.AGENT)
    factories.record_verdict(agent_llm_relabel, "success", prompt_version="judge/v1", model="m1")
    trajectory_relabel(trajectory=agent_llm_relabel, label="failure", reason="wrong answer", author=owner)
    factories.record_verdict(agent_llm_relabel, "failure", prompt_version="judge/v2", model="m2")
    llm_only = factories.make_done_trajectory(bank, verdict="", task="Judge only")
    factories.record_verdict(llm_only, "success", prompt_version="judge/v1", model="m1")
    human_only = factories.make_done_trajectory(bank, verdict="", task="Reviewer only")
    factories.record_verdict(human_only, "success", source=JudgmentSource.HUMAN, author=owner)
    monkeypatch.setattr(datasets, "CHUNK", 1)
    client.force_login(owner)
    rows = _rows(client, bank, "judge_eval")
    assert [(r["task"], r["prompt_version"], r["human_verdict"]) for r in rows] == [
        ("Human first", "judge/v1", "failure"),
        ("Agent, judge, reviewer", "judge/v1", "failure"),
        ("Agent, judge, reviewer", "judge/v2", "failure"),
    ]


@pytest.mark.django_db
def test_the_judge_set_s_chunk_is_an_index_range_read_of_the_human_judged_runs(bank, other_bank, owner):
    for target in (bank, other_bank):
        runs = Trajectory.objects.bulk_create(
            Trajectory(bank=target, task=f"t{i}", steps=[], verdict="success", verdict_tier=2) for i in range(3000)
        )
        judgments = [Judgment(trajectory=t, source=JudgmentSource.LLM, label="success") for t in runs]
        reviewed = runs[::60]
        judgments += [Judgment(trajectory=t, source=JudgmentSource.HUMAN, label="success") for t in reviewed]
        Judgment.objects.bulk_create(judgments)
        Trajectory.objects.filter(pk__in=[t.pk for t in reviewed]).update(verdict_tier=VerdictTier.HUMAN)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE trajectories_trajectory")
        cursor.execute("ANALYZE trajectories_rawrecord")
        cursor.execute("ANALYZE trajectories_judgment")
    with CaptureQueriesContext(connection) as queries:
        next(datasets.judge_eval_rows(bank=bank, with_input=False))
    (sql,) = [q["sql"] for q in queries if q["sql"].startswith('SELECT "trajectories_trajectory"')]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert plan.startswith("Limit"), plan
    lines = plan.splitlines()
    scan = next((i for i, line in enumerate(lines) if "Index Scan using trajectory_human_judged " in line), None)
    assert scan is not None, plan
    assert not any("Sort" in line for line in lines[:scan]), plan  # read in the index's order, never sorted
    assert "Seq Scan on trajectories_trajectory" not in plan, plan


def test_the_export_page_counts_the_served_items_up_to_the_cap(client, owner, bank, monkeypatch):
    factories.make_items(bank, 7)
    client.force_login(owner)
    url = reverse("trajectories:export", kwargs={"bank_id": bank.public_id})
    assert "the 7 items of its approved set" in client.get(url).content.decode()
    monkeypatch.setattr(search_paging, "LIST_COUNT_CAP", 5)
    with CaptureQueriesContext(connection) as queries:
        page = client.get(url).content.decode()
    assert page.count("the 5+ items of its approved set") == 2, page  # the reasoning-bank file and the agent files
    counts = [q["sql"] for q in queries if q["sql"].startswith("SELECT COUNT(*)") and "memories_memoryitem" in q["sql"]]
    assert counts and all("LIMIT 6" in sql for sql in counts), counts  # never every served item of the bank
    factories.make_items(bank, 1, status="archived")  # not served
    MemoryItem.objects.filter(bank=bank, status="approved").exclude(
        pk=MemoryItem.objects.filter(bank=bank).first().pk
    ).delete()
    assert client.get(url).content.decode().count("the 1 item of its approved set") == 2
