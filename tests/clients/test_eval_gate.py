"""The publishing gate end to end: a candidate release is evaluated by the scripted agent through the
Python client against a live server, a real worker computes the results, and making the candidate
production is let through or refused by what the evaluation found.

Twenty vault tasks, three tries, three arms (candidate, production, the same-budget control), under the
strictest gate (not worse than production, and better than the control): a helpful candidate passes, a
harmful one is worse than production and an equal one shows no difference, so neither reaches agents."""

from __future__ import annotations

import httpx
import pytest

import reasoningbank_client as rb
from memories.releases.models import EvaluationGate, ReleaseEvaluation
from memories.releases.publishing import release_gate_set
from memories.releases.selectors import bank_releasing
from tests import factories
from tests.clients.conftest import FAST_RETRY
from tests.clients.eval_agent import answer
from tests.clients.evaluation_setup import equal_candidate, harmful_candidate, helpful_candidate, vault_jsonl
from tests.helpers import wait_for
from tests.worker import celery_broker, celery_worker, celery_worker_env, fake_llm_worker_env  # noqa: F401

ARMS = ["candidate", "production", "control"]
TASKS, TRIES = 20, 3


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


@pytest.fixture
def review_token(bank) -> str:
    return factories.make_token(bank, scopes=("retrieve", "ingest", "review"))


def _make_production(rb_url: str, token: str, number: int) -> httpx.Response:
    """What "Make production" on the releases page does, through the review API."""
    return httpx.post(
        f"{rb_url}/api/v1/releases/{number}/rollback", headers={"Authorization": f"Bearer {token}"}, json={}
    )


@pytest.mark.worker
@pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True)
@pytest.mark.parametrize(
    ("build", "versus_production", "versus_control", "passes"),
    [
        (helpful_candidate, "better", "better", True),
        (harmful_candidate, "worse", "worse", False),
        (equal_candidate, "no_difference", "no_difference", False),
    ],
    ids=["helpful", "harmful", "equal"],
)
def test_a_candidate_reaches_agents_only_when_its_evaluation_passes_the_gate(
    bank, owner, approved, rb_url, review_token, celery_worker, build, versus_production, versus_control, passes
):
    candidate = build(bank, approved, n=TASKS)
    release_gate_set(bank=bank, gate=EvaluationGate.BEATS_CONTROL, actor=owner)

    refused = _make_production(rb_url, review_token, candidate)  # no evaluation yet
    assert refused.status_code == 409 and refused.json()["code"] == "evaluation_required", refused.text
    assert bank_releasing(bank=bank).production.number == 1

    with rb.Client(rb_url, review_token, retry=FAST_RETRY, timeout=60) as reviewer:
        reviewer.upload_task_set("vaults", vault_jsonl(TASKS))
        run = reviewer.create_evaluation("vaults", ARMS, TRIES, release=candidate)
        summary = reviewer.evaluate(run.id, answer, parallel=4)
        assert summary.done and summary.recorded == TASKS * len(ARMS) * TRIES and summary.failed == 0, summary
        # The worker computes the results once the last outcome is known.
        results = wait_for(
            lambda: (r := reviewer.evaluation(run.id).results).get("complete") and r, what="the run's results"
        )

    verdicts = {c["versus"]: c["verdict"] for c in results["comparisons"] if c["arm"] == "candidate"}
    assert verdicts == {"production": versus_production, "control": versus_control}, results["comparisons"]
    assert results["gate"]["passed"] is passes, results["gate"]
    evaluation = ReleaseEvaluation.objects.get(release__bank=bank, release__number=candidate)
    assert (evaluation.versus_production, evaluation.versus_control, evaluation.passed) == (
        versus_production,
        versus_control,
        passes,
    )

    response = _make_production(rb_url, review_token, candidate)
    if passes:
        assert response.status_code == 200, response.text
        assert bank_releasing(bank=bank).production.number == candidate
    else:
        assert response.status_code == 409 and response.json()["code"] == "evaluation_required", response.text
        detail = response.json()["detail"]
        assert ("worse than production" in detail) if versus_production == "worse" else ("control" in detail), detail
        assert bank_releasing(bank=bank).production.number == 1  # nothing changed: agents keep production
