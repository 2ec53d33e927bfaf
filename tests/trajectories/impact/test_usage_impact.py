"""Cost per arm on the Impact report: tokens per run (over the judged runs
that reported usage), steps per run, the memory block's tokens per retrieval
and successes per 1,000 tokens equal a direct computation over the stored
trajectories and retrievals — as appended, after verdict relabels, after a
deletion, after compaction and after a rebuild; the retrieval events record
their memory block's tokens; the page and the API show them."""

from __future__ import annotations

import json
import random

import pytest
from django.db.models import Q
from django.urls import reverse

from memories.serving.models import RetrievalEvent, RetrievalTally
from memories.serving.tallies import retrieval_tallies_compact, retrieval_tally_created
from reasoningbank_client.types import Impact
from reasoningbank_site.text import token_estimate
from tests.factories import make_items, with_holdout
from tests.memories.conftest import approved  # noqa: F401  (the embedded, approved item builder)
from tests.memories.test_retrieval_runs import LESSONS, OBSERVATIONS
from trajectories.impact.report import bank_impact
from trajectories.ingest.record import trajectory_ingest
from trajectories.judging.verdicts import judgment_record, retrieval_outcomes_rebuild
from trajectories.models import JudgmentSource, Trajectory
from trajectories.records.deletion import trajectory_delete

STEPS = [
    {"kind": "action", "content": "search"},
    {"kind": "action", "content": "open"},
    {"kind": "answer", "content": "ok"},
]


def direct(bank) -> dict:
    """Each arm's cost figures computed from the rows themselves, not the tallies."""
    out = {}
    for arm in ("treatment", "holdout"):
        judged = Trajectory.objects.filter(
            bank=bank, retrieval__arm=arm, retrieval__run__isnull=True, verdict__in=["success", "failure"]
        ).exclude(retrieval__results=[])
        usage = judged.filter(Q(prompt_tokens__isnull=False) | Q(completion_tokens__isnull=False))
        tokens = sum((t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in usage)
        successes = usage.filter(verdict="success").count()
        steps = [t.step_count for t in judged]
        memory = list(RetrievalEvent.objects.filter(bank=bank, arm=arm).values_list("memory_tokens", flat=True))
        out[arm] = {
            "usage_runs": usage.count(),
            "tokens_per_run": round(tokens / usage.count(), 6) if usage else None,
            "mean_steps": round(sum(steps) / len(steps), 6) if steps else None,
            "memory_tokens_per_retrieval": round(sum(memory) / len(memory), 6) if memory else None,
            "success_per_1k_tokens": round(1000 * successes / tokens, 6) if tokens else None,
        }
    return out


def reported(bank) -> dict:
    report = bank_impact(bank=bank)
    return {
        arm: {
            "usage_runs": stats.usage_runs,
            "tokens_per_run": None if stats.tokens_per_run is None else round(stats.tokens_per_run, 6),
            "mean_steps": None if stats.mean_steps is None else round(stats.mean_steps, 6),
            "memory_tokens_per_retrieval": None
            if stats.memory_tokens_per_retrieval is None
            else round(stats.memory_tokens_per_retrieval, 6),
            "success_per_1k_tokens": None
            if stats.success_per_1k_tokens is None
            else round(stats.success_per_1k_tokens, 6),
        }
        for arm, stats in (("treatment", report.treatment), ("holdout", report.holdout))
    }


def seeded_bank(bank, seed: int) -> list[Trajectory]:
    """Retrievals with memory blocks of random size (holdout: none), and
    trajectories with and without usage, judged by the agent or not."""
    rng = random.Random(seed)
    with_holdout(bank, 0.4)
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    items = make_items(bank, 3)
    trajectories = []
    for n in range(40):
        arm = "holdout" if rng.random() < 0.4 else "treatment"
        candidates = rng.sample(items, 2) if n % 8 else []  # some found nothing: not compared
        event = RetrievalEvent.objects.create(
            bank=bank,
            query=f"task {n}",
            mode="items",
            k=2,
            arm=arm,
            results=[{"id": str(i.public_id), "score": 0.9} for i in candidates],
            holdout_fraction=0.4,
            memory_tokens=rng.randint(50, 400) if arm == "treatment" and candidates else 0,
        )
        retrieval_tally_created(event=event)
        for _ in range(rng.choice([0, 1, 1, 2])):
            data = {
                "task": f"task {n}",
                "steps": STEPS[: rng.randint(1, 3)],
                "retrieval_id": str(event.public_id),
                "outcome": rng.choice(["success", "failure", None]),
            }
            kind = rng.choice(["both", "both", "prompt only", "none"])
            if kind == "both":
                data["usage"] = {"prompt_tokens": rng.randint(500, 5000), "completion_tokens": rng.randint(50, 500)}
            elif kind == "prompt only":
                data["usage"] = {"input_tokens": rng.randint(500, 5000)}
            trajectory, _ = trajectory_ingest(bank=bank, token=None, data=data)
            trajectories.append(trajectory)
    return trajectories


@pytest.mark.parametrize("seed", [3, 4])
def test_cost_per_arm_equals_a_direct_computation_through_relabels_deletion_and_compaction(bank, seed):
    rng = random.Random(seed)
    trajectories = seeded_bank(bank, seed)
    live = reported(bank)
    assert live == direct(bank)
    assert live["treatment"]["usage_runs"] > 0 and live["holdout"]["usage_runs"] > 0
    assert live["treatment"]["memory_tokens_per_retrieval"] > 0 and live["holdout"]["memory_tokens_per_retrieval"] == 0

    for trajectory in rng.sample(trajectories, 12):  # human verdicts: judged, unjudged and flipped runs
        trajectory.refresh_from_db()
        judgment_record(trajectory=trajectory, source=JudgmentSource.HUMAN, label=rng.choice(["success", "failure"]))
    relabelled = reported(bank)
    assert relabelled == direct(bank) and relabelled != live

    doomed = next(t for t in trajectories if t.prompt_tokens and Trajectory.objects.get(pk=t.pk).verdict)
    trajectory_delete(trajectory=doomed, token=None)
    after_delete = reported(bank)
    assert after_delete == direct(bank) and after_delete != relabelled

    assert retrieval_tallies_compact() > 0
    assert reported(bank) == after_delete

    retrieval_outcomes_rebuild(bank=bank)
    assert reported(bank) == after_delete


def test_without_reported_usage_the_arms_say_so_on_the_page_and_in_the_api(client, owner, bank, auth):
    with_holdout(bank, 0.5)
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    (item,) = make_items(bank, 1)
    event = RetrievalEvent.objects.create(
        bank=bank, query="q", mode="items", k=1, arm="treatment", results=[{"id": str(item.public_id)}],
        holdout_fraction=0.5, memory_tokens=120,
    )  # fmt: skip
    retrieval_tally_created(event=event)
    trajectory_ingest(
        bank=bank,
        token=None,
        data={"task": "q", "steps": STEPS, "outcome": "success", "retrieval_id": str(event.public_id)},
    )
    body = client.get("/api/v1/impact", **auth).json()
    assert body["treatment"]["usage_runs"] == 0 and body["treatment"]["tokens_per_run"] is None
    assert body["treatment"]["success_per_1k_tokens"] is None
    assert body["treatment"]["memory_tokens_per_retrieval"] == 120

    client.force_login(owner)
    page = client.get(reverse("trajectories:impact", kwargs={"bank_id": bank.public_id})).content.decode()
    assert "Cost per arm" in page and "no run reported usage" in page


def test_reported_usage_shows_per_arm_on_the_page_and_in_the_api(client, owner, bank, auth):
    with_holdout(bank, 0.5)
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    (item,) = make_items(bank, 1)
    for arm, outcome, usage in [
        ("treatment", "success", {"prompt_tokens": 3000, "completion_tokens": 1000}),
        ("treatment", "failure", {"prompt_tokens": 1000, "completion_tokens": 1000}),
        ("holdout", "success", {"input_tokens": 8000, "output_tokens": 2000}),
    ]:
        event = RetrievalEvent.objects.create(
            bank=bank, query="q", mode="items", k=1, arm=arm, results=[{"id": str(item.public_id)}],
            holdout_fraction=0.5, memory_tokens=200 if arm == "treatment" else 0,
        )  # fmt: skip
        retrieval_tally_created(event=event)
        data = {"task": "q", "steps": STEPS, "outcome": outcome, "retrieval_id": str(event.public_id), "usage": usage}
        trajectory_ingest(bank=bank, token=None, data=data)
    body = client.get("/api/v1/impact", **auth).json()
    treatment, holdout = body["treatment"], body["holdout"]
    assert (treatment["usage_runs"], treatment["tokens_per_run"]) == (2, 3000)
    assert (treatment["prompt_tokens_per_run"], treatment["completion_tokens_per_run"]) == (2000, 1000)
    assert treatment["success_per_1k_tokens"] == pytest.approx(1000 * 1 / 6000)
    assert treatment["memory_tokens_per_retrieval"] == 200 and treatment["mean_steps"] == 3
    assert (holdout["tokens_per_run"], holdout["success_per_1k_tokens"]) == (10000, pytest.approx(0.1))
    impact = Impact.from_dict(body)  # what client.impact() returns
    assert (impact.treatment.usage_runs, impact.treatment.tokens_per_run) == (2, 3000)
    assert impact.holdout.memory_tokens_per_retrieval == 0 and impact.treatment.mean_steps == 3

    client.force_login(owner)
    page = client.get(reverse("trajectories:impact", kwargs={"bank_id": bank.public_id})).content.decode()
    assert 'id="cost-treatment"' in page and "3000" in page and "0.167" in page and "10000" in page


RETRIEVE = "/api/v1/retrieve"


def test_each_retrieval_records_its_memory_blocks_tokens_steps_included_holdout_none(client, auth, bank, approved):
    bank.min_similarity, bank.holdout_fraction, bank.item_holdout_fraction = -1.0, 0.0, 0.0
    bank.save(update_fields=["min_similarity", "holdout_fraction", "item_holdout_fraction"])
    for lesson in LESSONS:
        approved(bank, *lesson)

    def retrieve(**extra):
        body = {"query": OBSERVATIONS[len(extra)], "k": 3, **extra}
        response = client.post(RETRIEVE, data=json.dumps(body), content_type="application/json", **auth)
        assert response.status_code == 200, response.content
        return response.json()

    first = retrieve()
    later = retrieve(run_id=first["run_id"])
    events = list(RetrievalEvent.objects.filter(bank=bank).order_by("pk"))
    assert [e.memory_tokens for e in events] == [
        token_estimate(first["system_block"]),
        token_estimate(later["system_block"]),
    ]
    assert all(e.memory_tokens > 0 for e in events)
    arm_rows = RetrievalTally.objects.filter(bank=bank, item__isnull=True)
    assert sum(r.memory_blocks for r in arm_rows) == 2 and sum(r.retrievals for r in arm_rows) == 1
    assert sum(r.memory_tokens for r in arm_rows) == sum(e.memory_tokens for e in events)

    with_holdout(bank, 1.0)
    held = retrieve()
    held_event = RetrievalEvent.objects.get(public_id=held["retrieval_id"])
    assert held_event.arm == "holdout" and held["system_block"] == "" and held_event.results  # would have served
    assert held_event.memory_tokens == 0

    retrieval_outcomes_rebuild(bank=bank)  # the rebuild counts every step's block, like the appended rows
    arm_rows = RetrievalTally.objects.filter(bank=bank, item__isnull=True)
    assert sum(r.memory_blocks for r in arm_rows) == 3
    assert sum(r.memory_tokens for r in arm_rows) == sum(e.memory_tokens for e in events)
