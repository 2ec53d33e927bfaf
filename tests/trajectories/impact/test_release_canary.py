"""The canary's verdict on a simulated population (bench/impact_simulation.py's
model, as in test_retirement: each served item adds its true effect to the
success probability) run through the real services: the canary serves a
lesson that hurts, its verdict says so, a rollback is proposed, and it is
performed on its own only in a bank that opted in (audited, announced on the
dashboard)."""

from __future__ import annotations

import random

import pytest
from django.urls import reverse

from accounts.models import AuditEvent, WebhookDelivery
from accounts.webhooks.subscriptions import webhook_subscription_create
from memories.releases.labels import release_policy_set
from memories.releases.models import BankReleasing, PublishMode
from memories.releases.publishing import release_mode_set, release_publish
from memories.review.decisions import memory_item_approve
from memories.serving import release_serving
from memories.serving.retrieval import retrieval_perform
from tests.factories import make_done_trajectory, make_trajectory, propose_item, record_verdict
from trajectories.impact.releases import canaries_auto_rollback, canary_auto_rollback, canary_verdict
from trajectories.impact.verdicts import Decision

QUERY = "Find the Sunday opening hours of the city library."
GOOD = ("Prefer the official source", "Check the library's own pages before answering about its opening hours.")
HARMFUL = ("Guess the hours from similar libraries", "When the library's hours are unclear, answer with typical hours.")
BASE, HURT = 0.7, -0.4
RETRIEVALS = 200


def _serving(bank):
    """The bank's labels as a request loads them (a fresh bank row)."""
    bank.refresh_from_db()
    return release_serving(bank=bank)


@pytest.fixture
def canary_population(bank, owner):
    """Release 1 serves the good lesson; release 2 adds the harmful one and is
    the canary for half of the retrievals; RETRIEVALS simulated runs, seeded."""
    bank.holdout_fraction, bank.item_holdout_fraction, bank.min_similarity = 0.0, 0.0, 0.0
    bank.save(update_fields=["holdout_fraction", "item_holdout_fraction", "min_similarity"])
    trajectory = make_done_trajectory(bank)
    good = propose_item(bank, trajectory, title=GOOD[0], content=GOOD[1], description="Library hours.")
    memory_item_approve(item=good, author=owner, confirm_duplicate=True)
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    harmful = propose_item(bank, trajectory, title=HARMFUL[0], content=HARMFUL[1], description="Library hours.")
    memory_item_approve(item=harmful, author=owner, confirm_duplicate=True)
    release_publish(bank=bank, actor=owner, note="adds a guess", canary_fraction=0.5)
    rng = random.Random(41)
    random.seed(42)  # retrieval_perform's arm draws
    for n in range(RETRIEVALS):
        result = retrieval_perform(bank=bank, query=QUERY)
        p = BASE + sum(HURT for item, _ in result.items if item.pk == harmful.pk)
        sent = make_trajectory(bank, status="done", task=f"{QUERY} ({n})", retrieval_id=str(result.event.public_id))
        record_verdict(sent, "success" if rng.random() < p else "failure")
    return good, harmful


def test_a_canary_that_hurts_is_found_worse_and_a_rollback_is_proposed_not_performed(
    bank, canary_population, owner, client
):
    verdict = canary_verdict(bank=bank)
    assert (verdict.production, verdict.canary, verdict.fraction) == (1, 2, 0.5)
    assert verdict.decision == Decision.HURTS and verdict.worse
    assert verdict.assessment.cs_high < 0 and all(g.ok for g in verdict.assessment.guardrails)
    assert verdict.canary_sums.units >= 30 and verdict.production_sums.units >= 30
    assert "significantly worse" in verdict.text
    # Not opted in: proposed on the release page, never performed.
    assert canary_auto_rollback(bank=bank) is None and canaries_auto_rollback() == 0
    assert _serving(bank).canary == 2
    client.force_login(owner)
    page = client.get(reverse("trajectories:releases", kwargs={"bank_id": bank.public_id}))
    assert page.status_code == 200
    assert b"significantly worse" in page.content and b"Roll back the canary" in page.content


def test_a_bank_that_opted_in_has_the_hurting_canary_rolled_back_audited_and_announced(
    bank, canary_population, owner, client, settings
):
    settings.RB_WEBHOOK_ALLOW_PRIVATE = True
    webhook_subscription_create(bank=bank, url="http://127.0.0.1:9/hooks", events="release.canary_rolled_back")
    release_policy_set(bank=bank, auto_rollback=True, actor=owner)
    assert canaries_auto_rollback() == 1  # what the beat task runs
    delivery = WebhookDelivery.objects.get()  # sent by a worker once the rollback commits
    assert delivery.event == "release.canary_rolled_back"
    data = delivery.payload["data"]
    assert data["bank"]["id"] == str(bank.public_id) and data["release"] == {"canary": 2, "production": 1}
    assert data["note"].startswith("Canary release 2 was rolled back automatically.")
    serving = _serving(bank)
    assert (serving.production, serving.canary) == (1, None)
    event = AuditEvent.objects.get(action="release.auto_roll_back_canary")
    assert (
        event.before["canary"] == 2 and event.after["canary"] is None and "significantly worse" in event.after["note"]
    )
    notice = BankReleasing.objects.get(bank=bank).rollback_notice
    assert notice.startswith("Canary release 2 was rolled back automatically.")
    assert canaries_auto_rollback() == 0  # nothing left to roll back
    client.force_login(owner)
    dashboard = client.get(reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id}))
    assert b"Canary release 2 was rolled back automatically." in dashboard.content


def test_a_canary_that_does_no_harm_is_not_rolled_back(bank, owner):
    trajectory = make_done_trajectory(bank)
    good = propose_item(bank, trajectory, title=GOOD[0], content=GOOD[1], description="Library hours.")
    memory_item_approve(item=good, author=owner, confirm_duplicate=True)
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    assert canary_verdict(bank=bank) is None  # no canary, no verdict
    other = propose_item(bank, trajectory, title=HARMFUL[0], content=HARMFUL[1], description="Library hours.")
    memory_item_approve(item=other, author=owner, confirm_duplicate=True)
    release_publish(bank=bank, actor=owner, canary_fraction=0.3)
    release_policy_set(bank=bank, auto_rollback=True, actor=owner)
    verdict = canary_verdict(bank=bank)
    assert verdict.decision == Decision.NOT_ENOUGH_DATA and "Not enough data" in verdict.text
    assert canaries_auto_rollback() == 0 and _serving(bank).canary == 2
