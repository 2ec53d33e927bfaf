"""The pipeline's Celery tasks (trajectories.pipeline.tasks): transient LLM
errors retried with backoff, then the row parked awaiting the LLM."""

import pytest
from celery import signals

from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_FAILURE, JUDGE_SUCCESS
from trajectories.models import Status
from trajectories.pipeline.tasks import retry_countdown

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_rate_limit_then_success_retries_with_backoff(fake_llm, make_trajectory):
    fake_llm.error(429, "slow down", retry_after=7).reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    retries = []

    def on_retry(sender=None, reason=None, **kwargs):
        retries.append(reason)

    signals.task_retry.connect(on_retry)
    try:
        t = process_trajectory(make_trajectory())
    finally:
        signals.task_retry.disconnect(on_retry)
    assert t.status == Status.DONE and t.verdict == "success"
    assert len(retries) == 1
    assert retries[0].when >= 7  # the server's Retry-After is honoured
    assert len(fake_llm.requests) == 3


def test_backoff_grows_and_is_capped(settings):
    settings.RB_LLM_RETRY_BACKOFF = 10
    settings.RB_LLM_RETRY_BACKOFF_MAX = 100
    assert 7.5 <= retry_countdown(0) <= 10
    assert 30 <= retry_countdown(2) <= 40
    assert retry_countdown(10) <= 100
    assert retry_countdown(0, retry_after=50) == 50


def test_server_errors_until_retries_run_out_park_it_awaiting_the_llm(fake_llm, settings, make_trajectory):
    settings.RB_LLM_MAX_RETRIES = 2
    for _ in range(3):
        fake_llm.error(503, "overloaded")
    t = process_trajectory(make_trajectory())
    # Temporary causes are not a human's problem: it waits for the endpoint, not in needs_attention.
    assert t.status == Status.AWAITING_LLM and t.retry_at is not None and t.enqueued_at is None
    assert "gave up after 3 attempts" in t.status_detail and "503" in t.status_detail
    assert t.judge_attempts == 3
    assert t.verdict == "" and not t.judgments.exists()


def test_timeout_is_transient_and_retried(fake_llm, settings, make_trajectory):
    settings.RB_LLM_TIMEOUT = 0.5
    fake_llm.reply(JUDGE_SUCCESS, delay=2.0).reply(JUDGE_FAILURE).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE
    assert t.verdict == "failure"  # the slow answer was abandoned, the retry's answer counts


def test_timeout_detail_when_retries_run_out(fake_llm, settings, make_trajectory):
    settings.RB_LLM_TIMEOUT = 0.3
    settings.RB_LLM_MAX_RETRIES = 0
    fake_llm.reply(JUDGE_SUCCESS, delay=1.0)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.AWAITING_LLM
    assert "did not answer within 0.3s" in t.status_detail
