"""The daily LLM token budget holds an estimate before each call: with N
tokens left the calls made never spend more than N (beyond one call's
estimate error), a hold is replaced by the call's real usage or dropped when
the call fails, and two calls in flight at once cannot both take the last
tokens (the policy row's lock, on the real PostgreSQL)."""

import threading

import pytest
from django.db import connection, transaction
from django.db.models import Sum
from django.utils import timezone

from accounts.teams.banks import bank_update_settings
from memories.trust.services import bank_trust_policy_update
from tests import factories
from tests.factories import process_trajectory
from tests.fake_llm import Scripted
from tests.helpers import wait_for, wait_until_another_waits_on_my_lock
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import Status, Trajectory
from trajectories.pipeline import sweeper
from trajectories.pipeline.llm import chat
from trajectories.pipeline.llm_errors import LLMBudgetSpent, LLMPermanentError
from trajectories.pipeline.llm_usage import llm_budget_hold, llm_call_estimate
from trajectories.pipeline.models import LLMBudgetHold, LLMStage, LLMUsage

USAGE = {"prompt_tokens": 700, "completion_tokens": 100}  # what each call of the scripted endpoint costs


def _judging(messages) -> bool:
    return "accomplished the task" in messages[-1]["content"]


def _spent_today(bank) -> int:
    sums = LLMUsage.objects.filter(bank=bank, day=timezone.now().date()).aggregate(
        p=Sum("prompt_tokens"), c=Sum("completion_tokens")
    )
    return (sums["p"] or 0) + (sums["c"] or 0)


def _spend(bank, tokens):
    LLMUsage.objects.create(
        bank=bank, day=timezone.now().date(), stage=LLMStage.JUDGE, model="earlier", calls=1, prompt_tokens=tokens
    )


@pytest.mark.django_db
@pytest.mark.usefixtures("eager_celery")
def test_the_calls_made_never_spend_more_than_is_left(bank, owner, fake_llm, django_capture_on_commit_callbacks):
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=10_000)
    _spend(bank, 8_000)  # 2,000 left
    fake_llm.responder = lambda messages: Scripted(text=JUDGE_SUCCESS if _judging(messages) else ITEMS_MD, usage=USAGE)
    runs = [
        process_trajectory(factories.make_trajectory(bank, task=f"Find the pool hours, day {n}.")) for n in range(6)
    ]

    made = len(fake_llm.requests)
    assert made >= 1  # the budget covered some work…
    spent = _spent_today(bank) - 8_000
    assert spent == made * 800
    # …and no more than was left, but for how much a call's real usage outran its estimate.
    estimates = [
        llm_call_estimate(messages=r["messages"], purpose="judge" if _judging(r["messages"]) else "distill")
        for r in fake_llm.requests
    ]
    error = max(0, max(800 - e for e in estimates))
    assert spent <= 2_000 + error
    parked = Trajectory.objects.filter(pk__in=[t.pk for t in runs], status=Status.AWAITING_LLM)
    assert parked.exists() and all("daily LLM token budget is spent" in t.status_detail for t in parked)
    assert not LLMBudgetHold.objects.exists()  # every hold settled into real usage

    # A raised budget resumes them, and no run is judged or distilled twice (one parked between the two).
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=1_000_000)
    parked.update(retry_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        sweeper.pipeline_sweep()
    assert {t.status for t in Trajectory.objects.filter(bank=bank)} == {Status.DONE}
    judge_calls = [r for r in fake_llm.requests if _judging(r["messages"])]
    assert (len(judge_calls), len(fake_llm.requests)) == (len(runs), 2 * len(runs))


@pytest.mark.django_db
def test_a_hold_is_settled_to_the_real_usage_and_dropped_when_the_call_fails(bank, owner, fake_llm):
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=50_000)
    messages = [{"role": "user", "content": "Judge this run."}]
    fake_llm.reply("fine", usage={"prompt_tokens": 5, "completion_tokens": 2})
    assert chat(model="m", messages=messages, purpose="judge", bank_id=bank.pk) == "fine"
    assert _spent_today(bank) == 7 and not LLMBudgetHold.objects.exists()

    fake_llm.error(400, "bad request")
    with pytest.raises(LLMPermanentError):
        chat(model="m", messages=messages, purpose="judge", bank_id=bank.pk)
    assert _spent_today(bank) == 7 and not LLMBudgetHold.objects.exists()


@pytest.mark.django_db
def test_a_call_the_budget_cannot_cover_is_not_sent(bank, owner, fake_llm):
    messages = [{"role": "user", "content": "Judge this run."}]
    needed = llm_call_estimate(messages=messages, purpose="judge")
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=needed + 100)
    _spend(bank, 101)
    with pytest.raises(LLMBudgetSpent) as refused:
        chat(model="m", messages=messages, purpose="judge", bank_id=bank.pk)
    assert "budget is spent" in str(refused.value) and refused.value.left == needed - 1
    assert fake_llm.requests == [] and not LLMBudgetHold.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_calls_in_flight_cannot_both_take_the_last_tokens(bank, owner, fake_llm):
    messages = [{"role": "user", "content": "Judge this run."}]
    needed = llm_call_estimate(messages=messages, purpose="judge")
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=needed * 3 // 2)  # room for one
    fake_llm.reply("first", delay=1.0).reply("second", delay=1.0)
    outcomes = []

    def call():
        try:
            outcomes.append(chat(model="m", messages=messages, purpose="judge", bank_id=bank.pk))
        except LLMBudgetSpent:
            outcomes.append("refused")
        finally:
            connection.close()

    first = threading.Thread(target=call)
    first.start()
    wait_for(lambda: fake_llm.requests, timeout=10, what="the first call to wait for its answer, its hold taken")
    call()
    first.join()
    assert sorted(outcomes) == ["first", "refused"]
    assert len(fake_llm.requests) == 1


@pytest.mark.django_db(transaction=True)
def test_the_policy_row_lock_makes_the_second_hold_wait_and_see_the_first(bank, owner):
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=1_500)
    taken, results = threading.Event(), []

    def hold_then_commit_slowly():
        try:
            with transaction.atomic():
                results.append(("first", llm_budget_hold(bank_id=bank.pk, tokens=1_000)))
                taken.set()
                wait_until_another_waits_on_my_lock()  # the second hold waits for this commit
        finally:
            connection.close()

    first = threading.Thread(target=hold_then_commit_slowly)
    first.start()
    assert taken.wait(10)
    with pytest.raises(LLMBudgetSpent) as refused:
        llm_budget_hold(bank_id=bank.pk, tokens=1_000)
    first.join()
    assert results[0][1] is not None and refused.value.left == 500
    assert list(LLMBudgetHold.objects.values_list("tokens", flat=True)) == [1_000]


@pytest.mark.django_db
@pytest.mark.usefixtures("eager_celery")
def test_a_stage_whose_call_the_budget_cannot_cover_parks_its_run(
    bank, owner, fake_llm, django_capture_on_commit_callbacks
):
    bank_update_settings(bank=bank, actor=None, trust_agent_outcome=True)  # judged by its own outcome: distill next
    bank.refresh_from_db()
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=500)  # some left, less than a distill
    t = process_trajectory(factories.make_trajectory(bank, outcome="success"))
    assert (t.status, t.verdict) == (Status.AWAITING_LLM, "success")
    assert "daily LLM token budget is spent" in t.status_detail and fake_llm.requests == []

    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=100_000)
    Trajectory.objects.filter(pk=t.pk).update(retry_at=timezone.now())
    fake_llm.reply(ITEMS_MD)
    with django_capture_on_commit_callbacks(execute=True):
        sweeper.pipeline_sweep()
    t.refresh_from_db()
    assert t.status == Status.DONE and len(fake_llm.requests) == 1
