"""How a stage asks the LLM (trajectories.pipeline.llm_calls): one reminder for
an unparseable answer, then needs_attention; a permanent error is not retried."""

import pytest

from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD
from trajectories.models import Status

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_unparseable_judge_answer_is_retried_once_then_needs_attention(fake_llm, make_trajectory):
    fake_llm.reply("The agent did some things. Hard to say.").reply("I would rather not decide.")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.NEEDS_ATTENTION
    assert "no parseable verdict" in t.status_detail and "I would rather not decide." in t.status_detail
    assert t.verdict == "" and not t.judgments.exists()
    assert len(fake_llm.requests) == 2
    # The retry carries the first answer and asks for the JSON form.
    assert fake_llm.requests[1]["messages"][1]["content"] == "The agent did some things. Hard to say."
    assert '"verdict"' in fake_llm.prompts[1]


def test_unparseable_then_good_answer_on_the_retry(fake_llm, make_trajectory):
    fake_llm.reply("Hmm.").reply("Status: failure").reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE and t.verdict == "failure"


def test_permanent_error_needs_attention_without_retry(fake_llm, make_trajectory):
    fake_llm.error(404, "model 'fake-model' not found")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.NEEDS_ATTENTION
    assert "404" in t.status_detail and "not found" in t.status_detail
    assert len(fake_llm.requests) == 1
