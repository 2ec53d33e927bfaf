"""MaTTS (memory-aware test-time scaling) through the processing task:
sequential refinement steps use their own distillation prompt; a parallel
group is judged member by member and contrasted once, when complete or when
the sweeper closes it; a relabelled member re-contrasts its group."""

import pytest
from django.urls import reverse

from memories.items.models import ItemOrigin, ItemStatus, MemoryItem
from memories.items.services import memory_item_create
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import FAILURE_ITEMS, ITEMS_MD, JUDGE_FAILURE, JUDGE_SUCCESS
from trajectories.judging.verdicts import trajectory_relabel
from trajectories.models import Status
from trajectories.pipeline.matts import trajectory_group_distill
from trajectories.pipeline.sweeper import pipeline_sweep

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

# --- MaTTS sequential ----------------------------------------------------------------------


def test_refinement_steps_use_the_sequential_prompt(fake_llm, make_trajectory):
    steps = [
        {"thought": "Search the schedule.", "action": "search('library hours')", "observation": "Sun 12-17"},
        {"refinement": "Pass 2: I answered from a cached page; the live page says Sun 13-17."},
        {"refinement": "Pass 3: confirmed 13-17 on the live page."},
        {"kind": "answer", "content": "13:00-17:00"},
    ]
    fake_llm.reply(JUDGE_SUCCESS).reply(FAILURE_ITEMS.replace("Reflection", "Reasoning"))
    t = process_trajectory(make_trajectory(steps=steps))
    assert t.status == Status.DONE
    item = MemoryItem.objects.get(experience=t.experience)
    assert (item.origin, item.prompt_version, item.verdict_label) == (
        ItemOrigin.MATTS_SEQUENTIAL,
        "matts_sequential/v1",
        "success",
    )
    prompt = fake_llm.prompts[1]
    assert "refinement" in prompt and "Pass 2: I answered from a cached page" in prompt


# --- MaTTS parallel ---------------------------------------------------------------------------

CONTRAST = """Rollout 1 read the live page; rollout 2 trusted a cache.

# Memory Item 1
## Title
Read the live page
## Description
When schedules may change.
## Content
Reload the primary source before answering a schedule question.
## Steps
R1S1, R2S0, R9S9
"""


def _judge_by_content(messages):
    prompt = messages[-1]["content"]
    if "Reviewing the work" in prompt or "accomplished the task" in prompt:
        return JUDGE_FAILURE if "cached" in prompt else JUDGE_SUCCESS
    if "<rollouts>" in prompt:
        return CONTRAST
    return ITEMS_MD


def test_parallel_group_is_contrasted_once_when_complete(fake_llm, make_trajectory):
    fake_llm.responder = _judge_by_content
    a = make_trajectory(
        group_id="g1", group_size=3, final_answer="Sun 12-17 (live page)", agent="bot-a", metadata={"env": "prod"}
    )
    b = make_trajectory(group_id="g1", final_answer="Sun 11-15 (cached page)", agent="bot-b", metadata={"env": "dev"})
    assert process_trajectory(a).status == Status.WAITING_GROUP
    assert process_trajectory(b).status == Status.WAITING_GROUP
    assert not MemoryItem.objects.exists()

    c = process_trajectory(
        make_trajectory(group_id="g1", final_answer="Sun 12-17 (live page)", agent="bot-a", metadata={"env": "prod"})
    )
    assert c.status == Status.DONE
    for t in (a, b):
        t.refresh_from_db()
        assert t.status == Status.DONE and t.experience_id == c.experience_id
    item = MemoryItem.objects.get()
    assert (item.origin, item.prompt_version, item.verdict_label) == (
        ItemOrigin.MATTS_PARALLEL,
        "matts_parallel/v1",
        "",
    )
    assert item.experience_id == a.experience_id
    # Provenance for the retrieval filters: every member's agent and metadata, once each.
    assert (item.source_agents, item.source_metadata) == (["bot-a", "bot-b"], [{"env": "prod"}, {"env": "dev"}])
    # Citations map to the rollouts' trajectories; an out-of-range one is dropped.
    assert item.cited_steps == [
        {"trajectory": str(a.public_id), "step": 1},
        {"trajectory": str(b.public_id), "step": 0},
    ]
    contrast_prompts = [p for p in fake_llm.prompts if "<rollouts>" in p]
    assert len(contrast_prompts) == 1
    assert 'verdict="failure"' in contrast_prompts[0] and 'verdict="success"' in contrast_prompts[0]

    # Late redelivery of any member changes nothing.
    process_trajectory(a)
    assert MemoryItem.objects.count() == 1


def test_incomplete_group_is_closed_by_the_sweeper_after_the_wait(
    fake_llm, make_trajectory, settings, django_capture_on_commit_callbacks
):
    fake_llm.responder = _judge_by_content
    a = process_trajectory(make_trajectory(group_id="g2", group_size=4))
    b = process_trajectory(make_trajectory(group_id="g2", final_answer="cached"))
    assert a.status == b.status == Status.WAITING_GROUP

    with django_capture_on_commit_callbacks(execute=True):
        report = pipeline_sweep()  # wait not over yet
    assert report.groups_closed == []
    with django_capture_on_commit_callbacks(execute=True):
        report = pipeline_sweep(group_wait_seconds=0)
    assert report.groups_closed == [(a.bank_id, "g2")]
    a.refresh_from_db()
    b.refresh_from_db()
    assert a.status == b.status == Status.DONE
    assert MemoryItem.objects.get().origin == ItemOrigin.MATTS_PARALLEL


def test_lone_group_member_is_distilled_on_its_own_when_the_group_expires(
    fake_llm, make_trajectory, django_capture_on_commit_callbacks
):
    fake_llm.responder = _judge_by_content
    a = process_trajectory(make_trajectory(group_id="g3", group_size=3))
    with django_capture_on_commit_callbacks(execute=True):
        assert trajectory_group_distill(bank_id=a.bank_id, group_id="g3", force=True) is False
    a.refresh_from_db()
    assert a.status == Status.DONE
    assert MemoryItem.objects.filter(origin=ItemOrigin.SUCCESS).count() == 2


def test_groups_are_per_bank(fake_llm, make_trajectory, other_bank):
    fake_llm.responder = _judge_by_content
    a = process_trajectory(make_trajectory(group_id="same", group_size=2))
    theirs = process_trajectory(make_trajectory(_bank=other_bank, group_id="same", group_size=2))
    assert a.status == theirs.status == Status.WAITING_GROUP
    assert not MemoryItem.objects.exists()


def test_relabel_of_a_group_member_recontrasts_the_group(
    fake_llm, make_trajectory, owner, django_capture_on_commit_callbacks
):
    fake_llm.responder = _judge_by_content
    a = process_trajectory(make_trajectory(group_id="g4", group_size=2))
    b = process_trajectory(make_trajectory(group_id="g4", final_answer="cached"))
    assert b.status == Status.DONE
    old = MemoryItem.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        trajectory_relabel(trajectory=b, label="success", reason="Cached value was right.", author=owner)
    old.refresh_from_db()
    assert old.status == ItemStatus.SUPERSEDED
    assert MemoryItem.objects.filter(status=ItemStatus.PROPOSED, origin=ItemOrigin.MATTS_PARALLEL).count() == 1
    for t in (a, b):
        t.refresh_from_db()
        assert t.status == Status.DONE
    assert 'verdict="failure"' not in [p for p in fake_llm.prompts if "<rollouts>" in p][-1]


def test_complete_group_without_llm_resumes_when_one_is_set(
    no_llm, make_trajectory, bank, settings, django_capture_on_commit_callbacks
):
    bank.trust_agent_outcome = True
    bank.save(update_fields=["trust_agent_outcome"])
    a = process_trajectory(make_trajectory(group_id="g5", group_size=2, outcome="success"))
    b = process_trajectory(make_trajectory(group_id="g5", outcome="failure", final_answer="cached"))
    assert a.status == b.status == Status.WAITING_GROUP
    assert "RB_LLM_BASE_URL" in b.status_detail

    from tests.fake_llm import FakeLLM

    server = FakeLLM().start()
    try:
        settings.RB_LLM_BASE_URL = server.base_url
        server.reply(CONTRAST)
        with django_capture_on_commit_callbacks(execute=True):
            pipeline_sweep()
    finally:
        server.stop()
    a.refresh_from_db()
    assert a.status == Status.DONE
    assert MemoryItem.objects.get().origin == ItemOrigin.MATTS_PARALLEL


def test_a_contrast_lesson_the_bank_already_holds_is_not_counted_as_proposed(
    client, owner, bank, fake_llm, make_trajectory
):
    held = memory_item_create(
        bank=bank,
        title="Read the live page",
        description="When schedules may change.",
        content="Reload the primary source before answering a schedule question.",
        status=ItemStatus.APPROVED,
    )
    fake_llm.responder = _judge_by_content
    a = make_trajectory(group_id="g-held", group_size=2, final_answer="Sun 12-17 (live page)")
    process_trajectory(a)
    b = process_trajectory(make_trajectory(group_id="g-held", final_answer="Sun 11-15 (cached page)"))
    assert b.status == Status.DONE
    assert list(MemoryItem.objects.values_list("pk", flat=True)) == [held.pk]  # recorded as support on it
    assert "0 memory items proposed for review" in b.status_detail
    assert "1 the bank already holds" in b.status_detail
    client.force_login(owner)
    group = reverse("trajectories:group", kwargs={"bank_id": bank.public_id, "trajectory_id": b.public_id})
    assert 'Contrast items <span class="muted small">(0)</span>' in client.get(group).content.decode()
