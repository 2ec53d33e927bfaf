"""A human relabel (trajectories.judging.verdicts.trajectory_relabel): supersede the
proposed items, flag the approved ones, re-distill; the audit log records it."""

import pytest

from accounts.models import AuditEvent
from memories.items.models import ItemOrigin, ItemStatus, MemoryItem
from memories.review.decisions import memory_item_approve
from reasoningbank_site.errors import Invalid
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import FAILURE_ITEMS, ITEMS_MD, JUDGE_SUCCESS
from trajectories.judging.verdicts import trajectory_relabel
from trajectories.models import JudgmentSource, Status

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]


def test_relabel_supersedes_proposed_flags_approved_and_redistills(
    fake_llm, make_trajectory, owner, django_capture_on_commit_callbacks
):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    first, second = MemoryItem.objects.filter(experience=t.experience).order_by("pk")
    memory_item_approve(item=first, author=owner)

    fake_llm.reply(FAILURE_ITEMS)
    with django_capture_on_commit_callbacks(execute=True):
        judgment = trajectory_relabel(
            trajectory=t, label="failure", reason="The library closes on Sundays.", author=owner
        )

    assert (judgment.source, judgment.label, judgment.author) == (JudgmentSource.HUMAN, "failure", owner)
    t.refresh_from_db()
    assert t.verdict == "failure" and t.status == Status.DONE
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == ItemStatus.APPROVED  # approved: kept, flagged for review
    assert "success to failure" in first.needs_review_reason
    assert second.status == ItemStatus.SUPERSEDED
    assert "The library closes on Sundays." in second.status_reason
    new = MemoryItem.objects.get(experience=t.experience, status=ItemStatus.PROPOSED)
    assert (new.title, new.origin, new.verdict_label, new.prompt_version) == (
        "Distrust cached copies",
        ItemOrigin.FAILURE,
        "failure",
        "distill_failure/v1",
    )
    assert "judged a FAILURE" in fake_llm.prompts[-1]
    assert len(fake_llm.requests) == 3  # no re-judging: the human verdict stands

    # The audit log holds the relabel and every item change it caused, with its actor.
    events = {(e.action, e.object_id): e for e in AuditEvent.objects.filter(bank=t.bank)}
    relabel = events[("trajectory.relabel", str(t.public_id))]
    assert (relabel.actor_user, relabel.before, relabel.after["verdict"]) == (owner, {"verdict": "success"}, "failure")
    assert events[("memory_item.approve", str(first.public_id))].actor_user == owner
    assert events[("memory_item.flag", str(first.public_id))].before["status"] == "approved"
    superseded = events[("memory_item.supersede", str(second.public_id))]
    assert (superseded.before["status"], superseded.after["status"]) == ("proposed", "superseded")


def test_relabel_to_the_same_verdict_changes_nothing(
    fake_llm, make_trajectory, owner, django_capture_on_commit_callbacks
):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        trajectory_relabel(trajectory=t, label="success", reason="Agreed.", author=owner)
    assert callbacks == []
    assert t.judgments.count() == 2
    assert MemoryItem.objects.filter(experience=t.experience, status=ItemStatus.PROPOSED).count() == 2


def test_relabel_rejects_unknown_label(make_trajectory, owner):
    with pytest.raises(Invalid):
        trajectory_relabel(trajectory=make_trajectory(), label="meh", reason="", author=owner)


def test_human_verdict_rescues_a_needs_attention_trajectory(
    fake_llm, make_trajectory, owner, django_capture_on_commit_callbacks
):
    fake_llm.reply("no idea").reply("still no idea")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.NEEDS_ATTENTION
    fake_llm.reply(FAILURE_ITEMS)
    with django_capture_on_commit_callbacks(execute=True):
        trajectory_relabel(trajectory=t, label="failure", reason="Wrong day.", author=owner)
    t.refresh_from_db()
    assert t.status == Status.DONE and t.verdict == "failure"
    assert MemoryItem.objects.filter(experience=t.experience).count() == 1
