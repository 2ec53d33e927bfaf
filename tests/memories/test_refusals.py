"""Refused lessons are remembered: a lesson distilled again near a rejected
(or archived-as-wrong) item is recorded on it as a repeat, never queued; a
reviewer can reopen it; the distiller is shown the nearest refused lessons.
Real embeddings (MiniLM) throughout."""

from __future__ import annotations

import pytest

from memories.items.models import ItemStatus, MemoryItem, SupportKind
from memories.learning.models import BankLearning
from memories.learning.policy import bank_learning_update
from memories.learning.refusals import memory_item_archive_as_wrong, memory_item_reopen
from memories.learning.selectors import LifecycleState, bank_learning_state, item_repeats, lifecycle_items
from memories.review.decisions import memory_item_approve, memory_item_archive, memory_item_reject
from reasoningbank_site.errors import Conflict, Invalid
from tests.factories import make_done_trajectory, propose_item
from trajectories.pipeline.refused import refused_lessons

SAME = "Prefer the official source"
AGAIN = "Prefer official sources"
OTHER = dict(
    title="Type dates into date picker inputs",
    description="Use when a form asks for a date with a calendar widget.",
    content="Typing the date as YYYY-MM-DD is more reliable than clicking through calendar months.",
)


def _proposed(bank):
    return list(MemoryItem.objects.filter(bank=bank, status=ItemStatus.PROPOSED).values_list("title", flat=True))


def test_a_rejected_lessons_repeat_is_recorded_on_it_and_never_queued(bank, trajectory, owner):
    rejected = propose_item(bank, trajectory, title=SAME)
    memory_item_reject(item=rejected, author=owner, reason="Official pages are often out of date here.")
    later = make_done_trajectory(bank)

    again = propose_item(bank, later, title=AGAIN)

    assert again.pk == rejected.pk and again.supported_by.kind == SupportKind.REPEATED
    assert _proposed(bank) == []
    rejected.refresh_from_db()
    assert rejected.status == ItemStatus.REJECTED and rejected.support_count == 1
    (repeat,) = item_repeats(item=rejected)
    assert repeat.trajectory_ids == [str(later.public_id)] and repeat.title == AGAIN
    assert rejected.versions.order_by("number").last().action == "repeated"
    assert list(lifecycle_items(bank=bank, state=LifecycleState.REPEATED)) == [rejected]
    # A different lesson is still proposed as new.
    other = propose_item(bank, later, **OTHER)
    assert other.status == ItemStatus.PROPOSED and _proposed(bank) == [OTHER["title"]]


def test_the_repeat_threshold_is_per_bank(bank, trajectory, owner):
    rejected = propose_item(bank, trajectory, title=SAME)
    memory_item_reject(item=rejected, author=owner, reason="no")
    bank_learning_update(bank=bank, actor=owner, repeat_threshold=1.0)  # only identical text repeats

    again = propose_item(bank, make_done_trajectory(bank), title=AGAIN)

    assert again.pk != rejected.pk and again.status == ItemStatus.PROPOSED
    assert BankLearning.objects.get(bank=bank).repeat_threshold == 1.0


def test_an_item_archived_as_wrong_refuses_its_repeats_and_a_plain_archive_does_not(bank, trajectory, owner):
    item = propose_item(bank, trajectory, title=SAME)
    memory_item_approve(item=item, author=owner)
    with pytest.raises(Invalid):
        memory_item_archive_as_wrong(item=item, author=owner, reason=" ")
    memory_item_archive_as_wrong(item=item, author=owner, reason="The site moved its hours page.")
    item.refresh_from_db()
    assert (item.status, item.archived_as_wrong, item.status_reason) == (
        ItemStatus.ARCHIVED,
        True,
        "The site moved its hours page.",
    )

    again = propose_item(bank, make_done_trajectory(bank), title=AGAIN)

    assert again.pk == item.pk and _proposed(bank) == []


def test_a_reviewer_reopens_a_refused_item_with_its_repeats_kept(bank, trajectory, owner):
    rejected = propose_item(bank, trajectory, title=SAME)
    memory_item_reject(item=rejected, author=owner, reason="no")
    propose_item(bank, make_done_trajectory(bank), title=AGAIN)

    memory_item_reopen(item=rejected, author=owner, note="Seen twice more: worth another look.")

    rejected.refresh_from_db()
    assert rejected.status == ItemStatus.PROPOSED and len(item_repeats(item=rejected)) == 1
    assert rejected.versions.order_by("number").last().action == "reopened"
    with pytest.raises(Conflict):
        memory_item_reopen(item=rejected, author=owner)  # a proposed item is not refused


def test_the_distiller_is_shown_the_nearest_refused_lessons_with_reasons(bank, trajectory, owner):
    assert refused_lessons(trajectory, bank_learning_state(bank=bank)) == ""
    rejected = propose_item(bank, trajectory, title=SAME)
    memory_item_reject(item=rejected, author=owner, reason="Official pages are often out of date here.")

    block = refused_lessons(trajectory, bank_learning_state(bank=bank))

    assert SAME in block and "Official pages are often out of date here." in block
    bank_learning_update(bank=bank, actor=owner, rejected_examples=0)
    assert refused_lessons(trajectory, bank_learning_state(bank=bank)) == ""


def test_learning_settings_refuse_bad_values_and_are_audited(bank, owner):
    with pytest.raises(Invalid, match="repeat_threshold"):
        bank_learning_update(bank=bank, actor=owner, repeat_threshold=0.2)
    with pytest.raises(Invalid, match="not a metadata key"):
        bank_learning_update(bank=bank, actor=owner, environment_keys=["site version!"])
    with pytest.raises(Invalid, match="Unknown"):
        bank_learning_update(bank=bank, actor=owner, nonsense=1)
    bank_learning_update(bank=bank, actor=owner, environment_keys="site_version, model site_version")
    assert BankLearning.objects.get(bank=bank).environment_keys == ["site_version", "model"]
    assert bank.team.audit_events.filter(action="bank.update_learning").count() == 1


def test_an_item_approved_again_is_no_longer_refused(bank, trajectory, owner):
    item = propose_item(bank, trajectory, title=SAME)
    memory_item_approve(item=item, author=owner)
    memory_item_archive_as_wrong(item=item, author=owner, reason="wrong for now")

    memory_item_approve(item=item, author=owner)
    memory_item_archive(item=item, author=owner)  # a plain archive this time: not a refusal

    item.refresh_from_db()
    assert item.status == ItemStatus.ARCHIVED and not item.archived_as_wrong
    again = propose_item(bank, make_done_trajectory(bank), title=AGAIN)
    assert again.pk != item.pk and again.status == ItemStatus.PROPOSED  # queued, not recorded as a repeat
