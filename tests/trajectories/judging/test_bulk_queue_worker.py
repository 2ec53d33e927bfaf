"""One team's judge experiment leaves another team's judging alone: an
experiment runs on the `bulk` queue and its own worker
(reasoningbank_site/workers.py), never in the pipeline's. Real workers, one
per role, as production runs them; the fake LLM answers the experiment's
calls slowly and the other team's at once."""

from __future__ import annotations

import pytest

from reasoningbank_site import workers
from tests import factories
from tests.fake_llm import Scripted
from tests.trajectories.judging.test_experiments import candidate, cases, judge_by_version  # noqa: F401
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_FAILURE
from tests.worker import celery_broker, celery_workers, fake_llm_worker_env, wait_for  # noqa: F401
from trajectories.judging.experiments import experiment_start
from trajectories.judging.models import ExperimentStatus
from trajectories.models import Status, Trajectory

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    # The webhook twin of this test runs on both brokers (tests/accounts/webhooks/test_queues_worker.py).
    pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True),
]

SLOW = 2.0  # seconds the LLM takes to answer each of the experiment's 10 calls
OTHER_TASK = "Renew the parking permit for the blue van before Friday."


@pytest.fixture
def eager_celery():
    """Off here: tasks must travel through the broker to the real workers."""
    yield


@pytest.fixture
def celery_worker_roles():
    return (workers.PIPELINE_WORKER, workers.BULK_WORKER)


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


def respond(messages):
    prompt = messages[-1]["content"]
    if OTHER_TASK in prompt:  # the other team's trajectory: judged, then distilled
        return JUDGE_FAILURE if "accomplished the task" in prompt else ITEMS_MD
    return Scripted(text=judge_by_version(messages), delay=SLOW)


def test_one_teams_experiment_leaves_another_teams_judging_alone(
    bank, owner, cases, candidate, fake_llm, celery_workers, client
):
    fake_llm.responder = respond
    experiment = experiment_start(
        bank=bank, candidate_prompt=candidate, candidate_model="", candidate_few_shot=False, author=owner
    )
    wait_for(lambda: fake_llm.requests, timeout=90, what="the experiment's first LLM call")

    judged = factories.make_bank()  # another team's
    assert judged.team_id != bank.team_id
    response = client.post(
        "/api/v1/trajectories",
        data={"task": OTHER_TASK, "steps": factories.STEPS, "final_answer": "Renewed online."},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {factories.make_token(judged)}",
    )
    assert response.status_code == 202, response.content
    trajectory = Trajectory.objects.get(bank=judged)

    def judged_or_stopped():
        trajectory.refresh_from_db()
        return trajectory.verdict or trajectory.status == Status.NEEDS_ATTENTION

    wait_for(judged_or_stopped, timeout=180, what="the pipeline worker to judge the other team's trajectory")
    experiment.refresh_from_db()
    assert trajectory.verdict == "failure", trajectory.status_detail
    # Judged while the experiment is still running: it never queued behind it.
    assert experiment.status == ExperimentStatus.RUNNING and experiment.done < experiment.total, (
        f"judged only once the experiment was {experiment.status} ({experiment.done}/{experiment.total})"
    )

    def experiment_finished():
        experiment.refresh_from_db()
        return experiment.status in (ExperimentStatus.DONE, ExperimentStatus.FAILED)

    wait_for(experiment_finished, timeout=180, what="the bulk worker to finish the experiment")
    assert experiment.status == ExperimentStatus.DONE, experiment.error
    assert "Task trajectories.experiment_run[" in celery_workers[workers.BULK_WORKER.name].log()
    assert "Task trajectories.experiment_run[" not in celery_workers[workers.PIPELINE_WORKER.name].log()
