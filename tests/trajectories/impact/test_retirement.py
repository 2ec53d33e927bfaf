"""Retirement proposals: a simulated population (bench/impact_simulation.py's
model — each served item adds its true effect to the success probability)
runs through the real service — retrievals with per-item randomisation,
trajectories sent back with them, judgments recorded — and the one item that
hurts is proposed for retirement with its evidence; optionally suspended
from serving until a reviewer decides (audited); supersede links an item to
its replacement."""

from __future__ import annotations

import random

import pytest

from accounts.models import AuditEvent
from memories.items.models import ItemStatus, MemoryItem
from memories.learning.policy import bank_learning_update
from memories.learning.retirement import (
    ItemEffect,
    memory_item_retirement_keep,
    memory_item_supersede_with,
    memory_items_outcomes_record,
)
from memories.learning.selectors import LifecycleState, lifecycle_items
from memories.review.decisions import memory_item_approve
from memories.serving.preview import retrieval_preview
from memories.serving.retrieval import retrieval_perform
from reasoningbank_site.errors import Invalid
from tests.factories import make_done_trajectory, make_trajectory, propose_item, record_verdict
from trajectories.impact.item_effects import bank_item_effects_record, item_effects_record_all

QUERY = "Find the Sunday opening hours of the city library."
LESSONS = [
    ("Prefer the official source", "Check the library's own pages before answering about its opening hours."),
    ("Answer in the asked format", "Restate only the library hours that were asked for, with explicit times."),
    ("Guess the hours from similar libraries", "When the library's hours are unclear, answer with typical hours."),
]
TRUTH = [0.0, 0.0, -0.4]  # the third lesson hurts
BASE = 0.7
RETRIEVALS = 160


@pytest.fixture
def population(bank, owner):
    """A bank of three approved lessons all served for QUERY, and RETRIEVALS
    simulated agent runs through the service, seeded."""
    bank.item_holdout_fraction, bank.top_k, bank.min_similarity = 0.5, 3, 0.0
    bank.save(update_fields=["item_holdout_fraction", "top_k", "min_similarity"])
    trajectory = make_done_trajectory(bank)
    items = []
    for title, content in LESSONS:
        item = propose_item(bank, trajectory, title=title, content=content, description="Library hours.")
        items.append(memory_item_approve(item=item, author=owner, confirm_duplicate=True))
    truth = {item.public_id: effect for item, effect in zip(items, TRUTH)}
    rng = random.Random(31)
    random.seed(32)  # retrieval_perform's per-item draws
    for n in range(RETRIEVALS):
        result = retrieval_perform(bank=bank, query=QUERY)
        p = BASE + sum(truth[item.public_id] for item, _score in result.items)
        sent = make_trajectory(bank, status="done", task=f"{QUERY} ({n})", retrieval_id=str(result.event.public_id))
        record_verdict(sent, "success" if rng.random() < p else "failure")
    return items


def _served(bank):
    return {item.title for item, _ in retrieval_preview(bank=bank, query=QUERY).items}


def test_the_item_that_hurts_is_proposed_for_retirement_with_its_evidence(bank, population):
    good, fine, harmful = population

    assert item_effects_record_all() == 1  # what the beat task runs: every bank that measures items

    proposed = [item for item in MemoryItem.objects.filter(bank=bank).exclude(retirement_reason="")]
    assert [item.pk for item in proposed] == [harmful.pk]
    harmful.refresh_from_db()
    assert harmful.status == ItemStatus.APPROVED and not harmful.suspended  # suspension is off by default
    assert harmful.retirement_reason.startswith("Impact says this item hurts")
    evidence = harmful.retirement_evidence
    assert evidence["comparison"] == "randomised" and evidence["difference"] < 0 and evidence["high"] < 0
    assert evidence["served_judged"] >= 10 and evidence["withheld_judged"] >= 10
    assert harmful.outcome_effect == pytest.approx(evidence["difference"]) and harmful.outcome_n > 0
    assert harmful.versions.order_by("number").last().action == "proposed-for-retirement"
    assert list(lifecycle_items(bank=bank, state=LifecycleState.RETIREMENT)) == [harmful]
    for item in (good, fine):
        item.refresh_from_db()
        assert item.retirement_reason == "" and item.outcome_n > 0
    assert LESSONS[2][0] in _served(bank)  # still served: a reviewer decides

    assert bank_item_effects_record(bank=bank) == []  # proposed once


def test_a_bank_may_suspend_an_item_that_hurts_until_a_reviewer_keeps_it(bank, owner, population):
    harmful = population[2]
    bank_learning_update(bank=bank, actor=owner, suspend_when_hurting=True)

    bank_item_effects_record(bank=bank)

    harmful.refresh_from_db()
    assert harmful.suspended and LESSONS[2][0] not in _served(bank)
    assert AuditEvent.objects.filter(action="memory_item.suspend", object_id=str(harmful.public_id)).exists()
    memory_item_retirement_keep(item=harmful, author=owner, note="It is right for this library.")
    harmful.refresh_from_db()
    assert not harmful.suspended and harmful.retirement_reason == "" and LESSONS[2][0] in _served(bank)
    assert AuditEvent.objects.filter(action="memory_item.unsuspend", object_id=str(harmful.public_id)).exists()

    bank_item_effects_record(bank=bank)  # the next beat run: the same evidence the reviewer kept it on
    harmful.refresh_from_db()
    assert not harmful.suspended and harmful.retirement_reason == ""
    kept_at_n = harmful.retirement_evidence["kept_at_n"]
    assert kept_at_n == harmful.outcome_n > 0

    memory_items_outcomes_record(  # evidence doubled since the keep: proposed (and suspended) again
        bank=bank, effects=[ItemEffect(str(harmful.public_id), -0.4, 2 * kept_at_n, hurts=True)]
    )
    harmful.refresh_from_db()
    assert harmful.suspended and harmful.retirement_reason.startswith("Impact says this item hurts")


def test_supersede_links_an_old_item_to_its_replacement(bank, item, owner):
    replacement = propose_item(bank, make_done_trajectory(bank), title="Type dates into date pickers")
    with pytest.raises(Invalid):
        memory_item_supersede_with(item=item, replacement=item, author=owner)

    memory_item_supersede_with(item=item, replacement=replacement, author=owner)

    item.refresh_from_db()
    assert item.status == ItemStatus.SUPERSEDED and item.superseded_by_id == replacement.pk
    assert str(replacement.public_id) in item.status_reason
    assert list(replacement.supersedes.all()) == [item]
    assert MemoryItem.objects.get(pk=item.pk).versions.order_by("number").last().action == "superseded"
