"""Decisions on an item's status (memories.review.decisions): approve, reject, archive, flag, the
transition table, merge and keep both — against the real database."""

import numpy as np
import pytest

from memories.embedding.model import embed_text, item_embedding_hash, item_embedding_text
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_propose
from memories.review.decisions import (
    memory_item_approve,
    memory_item_archive,
    memory_item_flag,
    memory_item_keep_both,
    memory_item_merge,
    memory_item_reject,
    memory_item_supersede,
)
from memories.serving.preview import retrieval_preview
from memories.tasks import memory_item_embed_task
from reasoningbank_site.errors import Conflict, Invalid
from tests.conftest import queued_tasks
from tests.memories.lessons import DATES, LOGIN, actions


def _not_yet_embedded(bank):
    """A proposed item whose embed task has not run yet (e.g. just edited)."""
    item = memory_item_propose(bank=bank, origin="success", **LOGIN)
    MemoryItem.objects.filter(pk=item.pk).update(embedding=None, embedding_hash="", embedding_model="")
    item.refresh_from_db()
    return item


def test_approve_answers_without_embedding_and_enqueues_the_embed(
    bank, owner, broker_queue, django_capture_on_commit_callbacks
):
    item = _not_yet_embedded(bank)
    before = broker_queue.snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        memory_item_approve(item=item, author=owner)
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED
    assert item.approved_by == owner and item.approved_at is not None
    assert item.embedding is None  # not embedded inside the request: a worker does it
    assert queued_tasks(broker_queue, before) == [("memories.embed_item", f"({item.pk},)")]
    assert actions(item) == [(1, "created", "proposed"), (2, "approved", "approved")]
    # Not served (and counted as pending) until the embed task ran; served after it.
    preview = retrieval_preview(bank=bank, query=LOGIN["title"])
    assert (preview.items, preview.pending_embeddings) == ([], 1)
    assert memory_item_embed_task(item.pk) is True
    preview = retrieval_preview(bank=bank, query=LOGIN["title"])
    assert [i.pk for i, _ in preview.items] == [item.pk] and preview.pending_embeddings == 0


def test_approve_with_eager_celery_embeds_after_commit(bank, owner, eager_celery, django_capture_on_commit_callbacks):
    item = _not_yet_embedded(bank)
    with django_capture_on_commit_callbacks(execute=True):
        memory_item_approve(item=item, author=owner)
        item.refresh_from_db()
        assert item.status == ItemStatus.APPROVED and item.embedding is None  # inside the transaction
    item.refresh_from_db()
    assert item.embedding_hash == item_embedding_hash(item)  # the task ran on commit


def test_approve_of_a_stale_embedding_enqueues_the_refresh(
    bank, owner, eager_celery, django_capture_on_commit_callbacks
):
    item = memory_item_propose(bank=bank, origin="success", **LOGIN)
    # Text changed behind the services' back and the vector came from another model.
    MemoryItem.objects.filter(pk=item.pk).update(content="Different text now.", embedding_model="old-model")
    item.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        memory_item_approve(item=item, author=owner)
    item.refresh_from_db()
    assert item.embedding_hash == item_embedding_hash(item)
    assert item.embedding_model != "old-model"
    expected = embed_text(item_embedding_text(title=item.title, description=item.description, content=item.content))
    assert float(np.dot(np.asarray(item.embedding), expected)) > 0.999


def test_transitions_are_validated(bank, owner):
    item = memory_item_propose(bank=bank, origin="success", **LOGIN)
    with pytest.raises(Conflict, match="archived"):
        memory_item_archive(item=item, author=owner)
    with pytest.raises(Conflict, match="flagged"):
        memory_item_flag(item=item, reason="looks wrong")
    memory_item_approve(item=item, author=owner)
    with pytest.raises(Conflict, match="rejected"):
        memory_item_reject(item=item, author=owner)
    memory_item_flag(item=item, reason="contradicts a newer lesson")
    item.refresh_from_db()
    assert item.needs_review_reason == "contradicts a newer lesson"
    assert item.status == ItemStatus.APPROVED
    memory_item_archive(item=item, author=owner)
    memory_item_approve(item=item, author=owner)  # archived items can come back
    memory_item_supersede(item=item, reason="merged into another item")
    with pytest.raises(Conflict, match="superseded item cannot be approved"):
        memory_item_approve(item=item, author=owner)
    item.refresh_from_db()
    assert item.status == ItemStatus.SUPERSEDED and item.status_reason == "merged into another item"
    assert [a for _, a, _ in actions(item)] == [
        "created",
        "approved",
        "flagged",
        "archived",
        "approved",
        "superseded",
    ]
    assert [n for n, _, _ in actions(item)] == [1, 2, 3, 4, 5, 6]


def test_reject_keeps_reason_and_repeated_transitions_are_no_ops(bank, owner):
    item = memory_item_propose(bank=bank, origin="failure", **DATES)
    memory_item_reject(item=item, author=owner, reason="too specific")
    memory_item_reject(item=item, author=owner, reason="again")
    item.refresh_from_db()
    assert item.status == ItemStatus.REJECTED and item.status_reason == "too specific"
    assert [a for _, a, _ in actions(item)] == ["created", "rejected"]
    with pytest.raises(Conflict):
        memory_item_supersede(item=item, reason="x")


def test_approving_a_flagged_item_clears_the_flag(bank, owner):
    item = memory_item_propose(bank=bank, origin="success", **LOGIN)
    memory_item_approve(item=item, author=owner)
    memory_item_approve(item=item, author=owner)  # no flag: nothing written
    assert item.versions.count() == 2
    memory_item_flag(item=item, reason="check")
    memory_item_approve(item=item, author=owner)
    item.refresh_from_db()
    assert item.needs_review_reason == ""
    assert [a for _, a, _ in actions(item)] == ["created", "approved", "flagged", "approved"]


def test_keep_both_on_an_approved_item_only_clears_and_records_the_suggestions(bank, owner):
    bank.duplicate_threshold = 1.0  # suggestions only: at the default these would be consolidated
    bank.save(update_fields=["duplicate_threshold"])
    first = memory_item_propose(bank=bank, origin="success", **LOGIN)
    second = memory_item_propose(
        bank=bank, origin="failure", **{**LOGIN, "title": "Log in before reading account data"}
    )
    memory_item_approve(item=second, author=owner)
    memory_item_keep_both(item=second, author=owner)
    second.refresh_from_db()
    assert second.status == ItemStatus.APPROVED and second.near_duplicates == []
    assert actions(second)[-1] == (3, "kept-both", "approved")
    assert first.title in second.versions.get(action="kept-both").note
    with pytest.raises(Conflict, match="no near-duplicate"):
        memory_item_keep_both(item=second, author=owner)


def test_merge_keeps_the_target_and_supersedes_the_item(bank, other_bank, owner):
    bank.duplicate_threshold = 1.0  # suggestions only: at the default these would be consolidated
    bank.save(update_fields=["duplicate_threshold"])
    target = memory_item_propose(bank=bank, origin="success", **LOGIN)
    dup = memory_item_propose(bank=bank, origin="failure", **{**LOGIN, "title": "Log in before reading account data"})
    theirs = memory_item_propose(bank=other_bank, origin="success", **LOGIN)
    with pytest.raises(Invalid, match="same bank"):
        memory_item_merge(item=dup, into=theirs, author=owner)
    with pytest.raises(Invalid, match="itself"):
        memory_item_merge(item=dup, into=dup, author=owner)
    assert memory_item_merge(item=dup, into=target, author=owner, note="same lesson").pk == target.pk
    target.refresh_from_db()
    dup.refresh_from_db()
    assert target.status == ItemStatus.APPROVED
    assert (
        dup.status == ItemStatus.SUPERSEDED
        and "same lesson" in dup.status_reason
        and owner.username in dup.status_reason
    )
