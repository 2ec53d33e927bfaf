"""An experiment through a real worker process: started by the service, run
by ``trajectories.experiment_run`` in the worker against the fake LLM that
answers per prompt version, progress and numbers read back from the row."""

import pytest

from tests.trajectories.judging.test_experiments import candidate, cases, judge_by_version  # noqa: F401
from tests.worker import celery_broker, celery_worker, fake_llm_worker_env, wait_for  # noqa: F401
from trajectories.judging.experiments import arm_result, experiment_start
from trajectories.judging.models import Experiment, ExperimentStatus

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def eager_celery():
    """Off here: the task must travel through the broker to the real worker."""
    yield


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


def test_the_worker_runs_an_experiment_to_the_scripted_numbers(bank, owner, cases, candidate, fake_llm, celery_worker):
    fake_llm.responder = judge_by_version
    experiment = experiment_start(
        bank=bank, candidate_prompt=candidate, candidate_model="", candidate_few_shot=False, author=owner
    )

    def finished():
        experiment.refresh_from_db()
        return experiment.status in (ExperimentStatus.DONE, ExperimentStatus.FAILED)

    wait_for(finished, timeout=120, what="the worker to run the experiment")
    assert experiment.status == ExperimentStatus.DONE, experiment.error
    assert (experiment.done, experiment.total) == (5, 5)
    base, cand = arm_result(experiment.cases, "baseline"), arm_result(experiment.cases, "candidate")
    assert (base.accuracy.text, base.false_success.text) == (
        "60% [23–88%] n=5",
        "2 of 2 (a rate needs 5 cases, 3 more)",
    )
    assert (cand.accuracy.text, cand.false_success.text) == (
        "100% [57–100%] n=5",
        "0 of 2 (a rate needs 5 cases, 3 more)",
    )
    assert len(fake_llm.requests) == 10
    assert "trajectories.experiment_run" in celery_worker.log()
    assert Experiment.objects.count() == 1
