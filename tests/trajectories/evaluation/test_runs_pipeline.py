"""An evaluation try in the learning pipeline: judged (its check, the agent's trusted word or the LLM
judge), never distilled, and its run's results refreshed whenever its verdict changes — a reviewer's
relabel included."""

from __future__ import annotations

import pytest

from memories.items.models import MemoryItem
from tests import factories
from tests.conftest import queued_tasks
from tests.trajectories.evaluation.runs_scene import make_task_set
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.evaluation.attempts import try_claim, try_outcome, try_record
from trajectories.evaluation.runs import evaluation_create
from trajectories.judging.verdicts import trajectory_relabel
from trajectories.models import Status
from trajectories.pipeline.distill import trajectory_distill
from trajectories.pipeline.rows import NOT_LEARNT_DETAIL

pytestmark = pytest.mark.django_db

STEPS = {"steps": factories.STEPS, "final_answer": "Sundays 12:00-17:00."}


@pytest.fixture
def run(bank):
    task_set = make_task_set(bank, tasks=[("hours", "When does the library open on Sundays?", None)])
    return evaluation_create(bank=bank, task_set=task_set, arms=["none", "control"], release=None, k=1)


def _recorded(run, **body):
    attempt = try_claim(run=run)
    return try_record(run=run, try_id=attempt.public_id, payload={**STEPS, **body})


def test_the_llm_judges_a_try_and_it_is_never_distilled(
    run, fake_llm, broker_queue, django_capture_on_commit_callbacks
):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)  # a distillation answer is there to be taken: it must not be
    attempt = _recorded(run)
    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        t = factories.process_trajectory(attempt.trajectory)
    assert (t.status, t.status_detail, t.verdict) == (Status.DONE, NOT_LEARNT_DETAIL, "success")
    assert len(fake_llm.requests) == 1 and t.experience_id is None
    assert not MemoryItem.objects.filter(bank=run.bank).exists()
    attempt.refresh_from_db()
    assert try_outcome(attempt) is True
    assert ("evaluation.results_refresh", f"({run.pk},)") in queued_tasks(broker_queue, before)
    assert trajectory_distill(trajectory_id=t.pk) is False and len(fake_llm.requests) == 1


def test_a_trusted_agent_outcome_is_the_verdict_and_no_llm_is_asked(run, no_llm):
    run.bank.trust_agent_outcome = True
    run.bank.save(update_fields=["trust_agent_outcome"])
    attempt = _recorded(run, outcome="failure")
    t = factories.process_trajectory(attempt.trajectory)
    assert (t.status, t.verdict) == (Status.DONE, "failure")
    assert try_outcome(attempt) is False


def test_an_untrusted_outcome_is_kept_but_judges_nothing(run, no_llm):
    run.bank.trust_agent_outcome = False
    run.bank.save(update_fields=["trust_agent_outcome"])
    attempt = _recorded(run, outcome="success")
    t = factories.process_trajectory(attempt.trajectory)
    assert (t.outcome, t.verdict, t.status) == ("success", "", Status.AWAITING_LLM)
    assert try_outcome(attempt) is None


def test_a_reviewer_s_relabel_refreshes_the_run_and_never_distills(
    run, owner, fake_llm, broker_queue, django_capture_on_commit_callbacks
):
    fake_llm.reply(JUDGE_SUCCESS)
    attempt = _recorded(run)
    t = factories.process_trajectory(attempt.trajectory)
    assert t.status == Status.DONE
    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        trajectory_relabel(trajectory=t, label="failure", reason="Wrong day.", author=owner)
    assert ("evaluation.results_refresh", f"({run.pk},)") in queued_tasks(broker_queue, before)
    t = factories.process_trajectory(t)  # the relabel's re-run: back to done, nothing distilled
    assert (t.status, t.verdict) == (Status.DONE, "failure") and len(fake_llm.requests) == 1
    assert not MemoryItem.objects.filter(bank=run.bank).exists()
    attempt.refresh_from_db()
    assert try_outcome(attempt) is False
