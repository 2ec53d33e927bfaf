"""The distill stage (trajectories.pipeline.distill): the prompt a verdict calls
for, an unparseable answer, and a result made stale while the LLM answered."""

import pytest

from memories.items.models import MemoryItem
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import Status, Trajectory
from trajectories.pipeline import distill, judge

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_failure_uses_failure_prompt(fake_llm, make_trajectory):
    fake_llm.reply("Verdict: FAILURE\nThe answer ignores the tool result.").reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE and t.verdict == "failure"
    item = MemoryItem.objects.filter(experience=t.experience).first()
    assert (item.origin, item.prompt_version, item.verdict_label) == ("failure", "distill_failure/v1", "failure")
    assert "judged a FAILURE" in fake_llm.prompts[1]


def test_distill_unparseable_needs_attention_but_keeps_the_verdict(fake_llm, make_trajectory):
    fake_llm.reply(JUDGE_SUCCESS).reply("Nothing to learn here.").reply("Still nothing.")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.NEEDS_ATTENTION and t.verdict == "success"
    assert "no complete memory item" in t.status_detail
    assert not MemoryItem.objects.filter(bank=t.bank).exists()


@pytest.mark.django_db(transaction=True)
def test_stale_result_is_discarded_when_relabelled_meanwhile(fake_llm, make_trajectory):
    """A distillation that finishes after the verdict changed (another
    connection, while the LLM was answering) writes nothing."""
    from django.db import connection

    t = make_trajectory()
    fake_llm.reply(JUDGE_SUCCESS)
    judge.trajectory_judge(trajectory_id=t.pk)

    def relabel_while_distilling(messages):
        try:  # runs in the server's thread, on its own connection
            Trajectory.objects.filter(pk=t.pk).update(verdict="failure")
        finally:
            connection.close()
        return ITEMS_MD

    fake_llm.responder = relabel_while_distilling
    assert distill.trajectory_distill(trajectory_id=t.pk) is False
    assert not MemoryItem.objects.filter(bank=t.bank).exists()
