"""The driver (trajectories.pipeline.advance) run by the processing task: judge →
distill through the real openai client against the fake server, the status
it leaves, idempotency, and waiting for an LLM."""

import pytest

from memories.items.models import ItemOrigin, ItemStatus, MemoryItem
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import JudgmentSource, Status

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_judge_success_then_distill_success_items(fake_llm, make_trajectory):
    fake_llm.reply("Looking at step 3, the hours match.\n" + JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(
        make_trajectory(task_id="library-1", agent="library-bot/2", metadata={"env": "prod", "site": {"id": 7}})
    )

    assert t.status == Status.DONE, t.status_detail
    assert t.verdict == "success"
    judgment = t.judgments.get()
    assert (judgment.source, judgment.label, judgment.model, judgment.prompt_version) == (
        "llm",
        "success",
        "fake-model",
        "judge/v1",
    )
    assert judgment.rationale == "The tool result shows Sunday hours and the answer matches."

    items = list(MemoryItem.objects.filter(experience=t.experience).order_by("pk"))
    assert [i.title for i in items] == ["Prefer the official source", "Answer in the asked format"]
    first = items[0]
    assert first.status == ItemStatus.PROPOSED and first.origin == ItemOrigin.SUCCESS
    assert (first.prompt_version, first.model, first.verdict_label) == ("distill_success/v1", "fake-model", "success")
    assert first.source_task_id == "library-1"
    # Provenance the retrieval filters search (memories never reads trajectories).
    assert (first.source_agents, first.source_metadata) == (["library-bot/2"], [{"env": "prod", "site": {"id": 7}}])
    assert first.cited_steps == [
        {"trajectory": str(t.public_id), "step": 2},
        {"trajectory": str(t.public_id), "step": 3},
    ]
    assert first.embedding is not None
    assert t.experience.task == t.task

    judge_prompt, distill_prompt = fake_llm.prompts
    assert "<trajectory>" in judge_prompt and "Find the opening hours" in judge_prompt
    assert "SUCCESS" in distill_prompt and "judged a SUCCESS" in distill_prompt


def test_trusted_agent_outcome_skips_the_judge(fake_llm, bank, make_trajectory):
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    fake_llm.reply(ITEMS_MD)
    t = process_trajectory(make_trajectory(outcome="failure"))
    assert t.status == Status.DONE and t.verdict == "failure"
    assert len(fake_llm.requests) == 1
    assert not t.judgments.filter(source=JudgmentSource.LLM).exists()


def test_bank_model_override_is_sent(fake_llm, bank, make_trajectory):
    bank.judge_model, bank.distill_model = "judge-xl", "distill-s"
    bank.save(update_fields=["judge_model", "distill_model"])
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    process_trajectory(make_trajectory())
    assert [r["model"] for r in fake_llm.requests] == ["judge-xl", "distill-s"]


def test_delivered_twice_makes_no_duplicates(fake_llm, make_trajectory):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = make_trajectory()
    process_trajectory(t)
    process_trajectory(t)  # a redelivery: nothing left to do, no LLM call
    assert t.judgments.count() == 1
    assert MemoryItem.objects.filter(bank=t.bank).count() == 2
    assert len(fake_llm.requests) == 2


def test_no_llm_with_trusted_verdict_waits_for_distillation(no_llm, bank, make_trajectory):
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    t = process_trajectory(make_trajectory(outcome="success"))
    assert t.status == Status.AWAITING_LLM and t.verdict == "success"
