"""A bank's daily LLM token budget: once today's counted tokens reach it,
trajectories wait in awaiting_llm saying so (nothing lost, no LLM call), and
resume when the budget is raised (or the day resets)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.teams.banks import bank_update_settings
from memories.items.models import MemoryItem
from memories.trust.services import bank_trust_policy_update
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import Status, Trajectory
from trajectories.pipeline import sweeper
from trajectories.pipeline.models import LLMStage, LLMUsage
from trajectories.pipeline.rows import trajectory_row

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def _spend(bank, tokens, model="fake-model"):
    LLMUsage.objects.create(
        bank=bank, day=timezone.now().date(), stage=LLMStage.JUDGE, model=model, calls=1, prompt_tokens=tokens
    )


def test_no_budget_means_no_limit(bank, fake_llm, make_trajectory):
    _spend(bank, 10**9)
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE
    assert trajectory_row(t.pk).llm_budget_left is None


def test_a_spent_budget_parks_then_a_raise_resumes(
    bank, owner, fake_llm, make_trajectory, django_capture_on_commit_callbacks
):
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=1000)
    _spend(bank, 400)
    assert trajectory_row(make_trajectory(task="Probe the budget.").pk).llm_budget_left == 600
    _spend(bank, 600, model="other-model")  # another model's row on the same day counts too
    t = process_trajectory(make_trajectory())
    assert t.status == Status.AWAITING_LLM
    assert "daily LLM token budget is spent" in t.status_detail and "nothing is lost" in t.status_detail
    assert fake_llm.requests == [] and t.retry_at is not None
    assert t.retry_at <= timezone.now() + timedelta(minutes=5, seconds=5)

    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=100_000)
    Trajectory.objects.filter(pk=t.pk).update(retry_at=timezone.now())  # its recheck time has come
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    with django_capture_on_commit_callbacks(execute=True):
        report = sweeper.pipeline_sweep()
    assert t.pk in report.resumed_awaiting_llm
    t.refresh_from_db()
    assert t.status == Status.DONE and MemoryItem.objects.filter(experience=t.experience).count() == 2


def test_yesterdays_tokens_do_not_count(bank, owner, fake_llm, make_trajectory):
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=10_000)  # room for a run's estimated calls
    LLMUsage.objects.create(
        bank=bank,
        day=timezone.now().date() - timedelta(days=1),
        stage=LLMStage.JUDGE,
        model="fake-model",
        calls=1,
        prompt_tokens=50_000,
    )
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    assert process_trajectory(make_trajectory()).status == Status.DONE


def test_a_matts_group_waits_for_the_budget_too(
    bank, owner, fake_llm, make_trajectory, django_capture_on_commit_callbacks
):
    bank_update_settings(bank=bank, actor=None, trust_agent_outcome=True)  # verdicts without the judge
    bank.refresh_from_db()
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=10)
    _spend(bank, 10)
    a = process_trajectory(make_trajectory(group_id="g", group_size=2, outcome="success"))
    b = process_trajectory(make_trajectory(group_id="g", outcome="success", final_answer="Another answer."))
    for t in (a, b):
        t.refresh_from_db()
        assert t.status == Status.WAITING_GROUP and "budget is spent" in t.status_detail and t.retry_at
    assert fake_llm.requests == []

    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=None)
    Trajectory.objects.filter(pk__in=[a.pk, b.pk]).update(retry_at=timezone.now())
    fake_llm.reply(ITEMS_MD)
    with django_capture_on_commit_callbacks(execute=True):
        sweeper.pipeline_sweep()
    a.refresh_from_db()
    assert a.status == Status.DONE and MemoryItem.objects.filter(experience=a.experience).exists()
