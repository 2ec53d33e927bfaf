"""LLM tokens per bank, day and stage (trajectories.pipeline.llm_usage): counted
where the endpoint's answer is known, through the fake LLM; banks apart;
concurrent calls lose nothing; prices turn tokens into an estimated cost, and a
model without a price has an unknown cost, not 0; a malformed RB_LLM_PRICES
stops the process at startup."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.dashboard.llm_usage import bank_llm_usage, llm_usage_by_bank, trajectory_llm_usage
from trajectories.pipeline.llm import chat
from trajectories.pipeline.llm_usage import llm_usage_record
from trajectories.pipeline.models import LLMUsage, TrajectoryLLMUsage

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]
ROOT = Path(__file__).resolve().parents[3]
CONTRAST = ITEMS_MD  # what a contrast call answers: memory items as well


def _words(text: str) -> int:
    return len(text.split())


def _usage(bank, stage):
    return LLMUsage.objects.filter(bank=bank, stage=stage).values_list(
        "day", "model", "calls", "prompt_tokens", "completion_tokens"
    )


def test_judge_and_distill_count_their_tokens_for_the_bank_the_day_and_the_trajectory(fake_llm, make_trajectory):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == "done"
    judge_prompt, distill_prompt = (_words(p) for p in fake_llm.prompts)
    today = timezone.now().date()
    assert list(_usage(t.bank, "judge")) == [(today, "fake-model", 1, judge_prompt, _words(JUDGE_SUCCESS))]
    assert list(_usage(t.bank, "distill")) == [(today, "fake-model", 1, distill_prompt, _words(ITEMS_MD))]
    per_trajectory = TrajectoryLLMUsage.objects.filter(trajectory=t).order_by("stage")
    assert [(u.stage, u.calls, u.prompt_tokens, u.completion_tokens) for u in per_trajectory] == [
        ("distill", 1, distill_prompt, _words(ITEMS_MD)),
        ("judge", 1, judge_prompt, _words(JUDGE_SUCCESS)),
    ]


def test_a_reminder_is_a_second_call_of_the_same_stage(fake_llm, make_trajectory):
    fake_llm.reply("I think it went fine.").reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    (row,) = _usage(t.bank, "judge")
    assert row[2] == 2 and row[4] == _words("I think it went fine.") + _words(JUDGE_SUCCESS)


def test_an_answer_without_usage_counts_the_call_and_no_tokens(fake_llm, bank):
    fake_llm.reply("hello", usage=None)
    chat(model="fake-model", messages=[{"role": "user", "content": "hi"}], purpose="judge", bank_id=bank.pk)
    assert list(_usage(bank, "judge").values_list("calls", "prompt_tokens", "completion_tokens")) == [(1, 0, 0)]


def _by_content(messages):
    prompt = messages[-1]["content"]
    if "<rollouts>" in prompt:
        return CONTRAST
    return JUDGE_SUCCESS if "Reviewing the work" in prompt or "accomplished the task" in prompt else ITEMS_MD


def test_two_banks_do_not_mix(fake_llm, make_trajectory, other_bank):
    fake_llm.responder = _by_content
    mine = process_trajectory(make_trajectory())
    theirs = process_trajectory(make_trajectory(other_bank, task="Something else entirely, with more words"))
    assert mine.status == theirs.status == "done"
    for t in (mine, theirs):
        lines = {line.label: line for line in bank_llm_usage(bank=t.bank).stages}
        per_trajectory = {u.stage: u.prompt_tokens for u in TrajectoryLLMUsage.objects.filter(trajectory=t)}
        assert lines["Judge"].calls == lines["Distillation"].calls == 1
        assert lines["Judge"].prompt_tokens == per_trajectory["judge"]
        assert lines["Distillation"].prompt_tokens == per_trajectory["distill"]
    assert LLMUsage.objects.count() == 4


def test_a_matts_group_counts_its_contrast_call_once_for_the_bank_and_whole_for_each_member(fake_llm, make_trajectory):
    fake_llm.responder = _by_content
    a = make_trajectory(group_id="g1", group_size=2, final_answer="Sun 12-17")
    b = make_trajectory(group_id="g1", final_answer="Sun 11-15")
    process_trajectory(a)
    assert process_trajectory(b).status == "done"
    (row,) = _usage(a.bank, "matts")
    assert row[2] == 1
    for t in (a, b):
        matts = TrajectoryLLMUsage.objects.get(trajectory=t, stage="matts")
        assert (matts.calls, matts.prompt_tokens, matts.completion_tokens) == (1, row[3], row[4])


def test_distilling_a_refined_trajectory_counts_as_matts(fake_llm, make_trajectory):
    steps = [{"thought": "Search.", "observation": "Sun 12-17"}, {"refinement": "Pass 2: the live page says 13-17."}]
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory(steps=steps))
    assert t.status == "done"
    assert sorted(TrajectoryLLMUsage.objects.filter(trajectory=t).values_list("stage", flat=True)) == ["judge", "matts"]
    assert not _usage(t.bank, "distill").exists()


def test_experiments_count_for_the_bank_only(fake_llm, bank):
    fake_llm.reply(JUDGE_SUCCESS)
    chat(model="judge-x", messages=[{"role": "user", "content": "a b c"}], purpose="experiment", bank_id=bank.pk)
    assert list(_usage(bank, "experiment").values_list("model", "calls", "prompt_tokens")) == [("judge-x", 1, 3)]
    assert not TrajectoryLLMUsage.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_calls_lose_no_count(bank, trajectory):
    """Threads on their own connections add to the same (bank, day, stage, model) row and the same
    trajectory row, the first ones racing to create them."""
    threads, calls = 8, 25
    usage = type("Usage", (), {"prompt_tokens": 3, "completion_tokens": 2})()
    start = threading.Barrier(threads)
    errors = []

    def work():
        try:
            start.wait()
            for _ in range(calls):
                llm_usage_record(bank_id=bank.pk, stage="judge", model="m", usage=usage, trajectory_ids=[trajectory.pk])
        except Exception as exc:  # surfaced below: an assertion in a thread would be lost
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    expected = (threads * calls, threads * calls * 3, threads * calls * 2)
    row = LLMUsage.objects.get(bank=bank)
    assert (row.calls, row.prompt_tokens, row.completion_tokens) == expected
    row = TrajectoryLLMUsage.objects.get(trajectory=trajectory)
    assert (row.calls, row.prompt_tokens, row.completion_tokens) == expected


@pytest.mark.django_db(transaction=True)
def test_a_deleted_trajectory_loses_only_its_own_count(bank, trajectory):
    usage = type("Usage", (), {"prompt_tokens": 5, "completion_tokens": 1})()
    gone = trajectory.pk
    trajectory.delete()
    llm_usage_record(bank_id=bank.pk, stage="judge", model="m", usage=usage, trajectory_ids=[gone])
    assert LLMUsage.objects.get(bank=bank).prompt_tokens == 5


def _record(bank, *, stage="judge", model="priced", prompt=0, completion=0, days_ago=0):
    usage = type("Usage", (), {"prompt_tokens": prompt, "completion_tokens": completion})()
    day = timezone.now().date() - timedelta(days=days_ago)
    llm_usage_record(bank_id=bank.pk, stage=stage, model=model, usage=usage, day=day)


def test_prices_turn_tokens_into_cost_per_stage_day_and_total(bank, settings):
    settings.RB_LLM_PRICES = {"priced": {"input": 2.0, "output": 10.0}, "cheap": {"input": 0.1, "output": 0.4}}
    _record(bank, prompt=1_000_000, completion=100_000)  # 2 + 1 = $3
    _record(bank, stage="distill", model="cheap", prompt=2_000_000, completion=500_000, days_ago=3)  # 0.2 + 0.2
    _record(bank, prompt=999, completion=999, days_ago=30)  # outside the 30 days
    usage = bank_llm_usage(bank=bank)
    assert [(s.label, s.cost) for s in usage.stages] == [("Judge", pytest.approx(3.0)), ("Distillation", 0.4)]
    assert usage.total.cost == pytest.approx(3.4) and usage.total.cost_text == "$3.40"
    assert usage.total.prompt_tokens == 3_000_000
    assert [d.label for d in usage.days] == [
        timezone.now().date().isoformat(),
        (timezone.now().date() - timedelta(days=3)).isoformat(),
    ]
    assert usage.unpriced == []


def test_a_model_without_a_price_has_an_unknown_cost_not_zero(bank, settings):
    settings.RB_LLM_PRICES = {"priced": {"input": 1.0, "output": 1.0}}
    _record(bank, stage="distill", model="mystery", prompt=500, completion=50)
    _record(bank, model="priced", prompt=1_000_000)
    usage = bank_llm_usage(bank=bank)
    judge, distill = usage.stages
    assert (distill.prompt_tokens, distill.cost, distill.cost_text) == (500, None, "unknown")
    assert (judge.cost, judge.cost_text) == (1.0, "$1.00")
    assert (usage.total.cost, usage.total.cost_text) == (None, "≥ $1.00")
    assert usage.unpriced == ["mystery"]
    by_stage = {u.stage: u.cost for u in llm_usage_by_bank()}
    assert by_stage == {"judge": 1.0, "distill": None}


def test_the_trajectory_reads_its_own_tokens_per_stage_and_model(trajectory, settings):
    settings.RB_LLM_PRICES = {"m": {"input": 1.0, "output": 1.0}}
    usage = type("Usage", (), {"prompt_tokens": 10, "completion_tokens": 4})()
    for stage in ("judge", "judge", "distill"):
        llm_usage_record(
            bank_id=trajectory.bank_id, stage=stage, model="m", usage=usage, trajectory_ids=[trajectory.pk]
        )
    lines, total = trajectory_llm_usage(trajectory=trajectory)
    assert [(line.label, line.calls, line.prompt_tokens) for line in lines] == [
        ("Distillation · m", 1, 10),
        ("Judge · m", 2, 20),
    ]
    assert (total.calls, total.tokens, total.cost_text) == (3, 42, "$0.0000")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{not json", "RB_LLM_PRICES is not valid JSON"),
        ('["gpt"]', "must be a JSON object of models"),
        ('{"gpt": 0.15}', 'RB_LLM_PRICES["gpt"] must be an object with exactly "input" and "output"'),
        ('{"gpt": {"input": 1}}', 'RB_LLM_PRICES["gpt"] must be an object with exactly "input" and "output"'),
        ('{"gpt": {"input": -1, "output": 2}}', 'RB_LLM_PRICES["gpt"]["input"] must be a number'),
        ('{"gpt": {"input": "0.1", "output": 2}}', 'RB_LLM_PRICES["gpt"]["input"] must be a number'),
    ],
)
def test_a_malformed_price_setting_stops_the_process_at_startup(value, message):
    env = {**os.environ, "RB_LLM_PRICES": value, "DJANGO_SETTINGS_MODULE": "reasoningbank_site.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and message in done.stderr


def test_a_valid_price_setting_is_read(monkeypatch):
    env = {
        **os.environ,
        "RB_LLM_PRICES": '{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}',
        "DJANGO_SETTINGS_MODULE": "reasoningbank_site.settings",
    }
    code = "from django.conf import settings; print(settings.RB_LLM_PRICES)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'gpt-4o-mini': {'input': 0.15, 'output': 0.6}}"
