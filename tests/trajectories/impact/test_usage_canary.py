"""Cost on the canary comparison: the canary and production arms' tokens per
run, successes per 1,000 tokens and memory block tokens per retrieval (steps
of a run included) equal a direct computation over the retrievals and
trajectories each release served, and the releases page shows them."""

from __future__ import annotations

import random

from django.db.models import Q
from django.urls import reverse

from memories.releases.models import PublishMode
from memories.releases.publishing import release_mode_set, release_publish
from memories.review.decisions import memory_item_approve
from memories.serving.models import RetrievalEvent
from memories.serving.retrieval import retrieval_perform
from tests.factories import make_done_trajectory, make_trajectory, propose_item, record_verdict
from trajectories.impact.releases import canary_verdict
from trajectories.models import Trajectory

QUERY = "Find the Sunday opening hours of the city library."


def direct(bank, release: int) -> tuple:
    judged = Trajectory.objects.filter(
        bank=bank, retrieval__release=release, retrieval__run__isnull=True, verdict__in=["success", "failure"]
    ).exclude(retrieval__results=[])
    usage = judged.filter(Q(prompt_tokens__isnull=False) | Q(completion_tokens__isnull=False))
    tokens = sum((t.prompt_tokens or 0) + (t.completion_tokens or 0) for t in usage)
    memory = list(RetrievalEvent.objects.filter(bank=bank, release=release).values_list("memory_tokens", flat=True))
    return (
        usage.count(),
        round(tokens / usage.count(), 6),
        round(1000 * usage.filter(verdict="success").count() / tokens, 6),
        round(sum(memory) / len(memory), 6),
    )


def test_canary_and_production_cost_equal_a_direct_computation_and_show_on_the_page(client, bank, owner):
    bank.holdout_fraction, bank.item_holdout_fraction, bank.min_similarity = 0.0, 0.0, 0.0
    bank.save(update_fields=["holdout_fraction", "item_holdout_fraction", "min_similarity"])
    trajectory = make_done_trajectory(bank)
    good = propose_item(bank, trajectory, title="Prefer the official source", content="Check the library's pages.")
    memory_item_approve(item=good, author=owner, confirm_duplicate=True)
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    more = propose_item(bank, trajectory, title="Call the front desk", content="When pages disagree, phone them.")
    memory_item_approve(item=more, author=owner, confirm_duplicate=True)
    release_publish(bank=bank, actor=owner, note="adds a call", canary_fraction=0.5)
    rng = random.Random(7)
    random.seed(8)
    for n in range(30):
        result = retrieval_perform(bank=bank, query=QUERY)
        if n % 3 == 0:  # a later step of the run: its memory block counts, its outcome does not
            retrieval_perform(bank=bank, query=f"{QUERY} step", run_id=result.event.public_id)
        usage = {"prompt_tokens": rng.randint(800, 4000), "completion_tokens": rng.randint(50, 400)} if n % 4 else None
        sent = make_trajectory(
            bank, status="done", task=f"{QUERY} ({n})", retrieval_id=str(result.event.public_id), usage=usage
        )
        record_verdict(sent, rng.choice(["success", "failure"]))

    verdict = canary_verdict(bank=bank)
    for number, sums in ((verdict.canary, verdict.canary_sums), (verdict.production, verdict.production_sums)):
        got = (
            sums.usage_runs,
            round(sums.tokens_per_run, 6),
            round(sums.success_per_1k_tokens, 6),
            round(sums.memory_tokens_per_retrieval, 6),
        )
        assert got == direct(bank, number) and sums.usage_runs > 0
        assert sums.retrievals == RetrievalEvent.objects.filter(bank=bank, release=number, run__isnull=True).count()

    client.force_login(owner)
    page = client.get(reverse("trajectories:releases", kwargs={"bank_id": bank.public_id})).content.decode()
    assert 'id="canary-cost"' in page and "tokens per run" in page and "successes per 1,000 tokens" in page
