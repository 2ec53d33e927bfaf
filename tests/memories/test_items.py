"""Making an item (memories.items.services): propose, create, edit — against the real database."""

import numpy as np
import pytest

from memories.embedding.model import item_embedding_hash
from memories.items.models import ItemStatus, MemoryItem
from memories.items.near_duplicates import NEAR_DUPLICATE_SIMILARITY
from memories.items.services import memory_item_create, memory_item_edit, memory_item_propose
from memories.review.decisions import memory_item_reject, memory_item_supersede
from reasoningbank_site.errors import Conflict, Invalid
from tests.memories.lessons import DATES, LOGIN, actions


def test_propose_embeds_and_records_version(bank):
    item = memory_item_propose(bank=bank, origin="success", source_task_id="t1", cited_steps=[{"step": 2}], **LOGIN)
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED
    assert item.embedding is not None and len(item.embedding) == 384
    assert abs(float(np.linalg.norm(item.embedding)) - 1.0) < 1e-3
    assert item.embedding_hash == item_embedding_hash(item)
    assert item.cited_steps == [{"step": 2}]
    assert item.near_duplicates == []
    assert actions(item) == [(1, "created", "proposed")]


def test_propose_records_near_duplicates_of_the_same_bank_only(bank, other_bank):
    bank.duplicate_threshold = 1.0  # suggestions only: at the default these would be consolidated
    bank.save(update_fields=["duplicate_threshold"])
    first = memory_item_propose(bank=bank, origin="success", **LOGIN)
    memory_item_propose(bank=other_bank, origin="success", **LOGIN)
    unrelated = memory_item_propose(bank=bank, origin="failure", **DATES)
    second = memory_item_propose(
        bank=bank, origin="failure", **{**LOGIN, "title": "Log in before reading account data"}
    )
    ids = [d["id"] for d in second.near_duplicates]
    assert ids == [str(first.public_id)]
    assert second.near_duplicates[0]["similarity"] >= NEAR_DUPLICATE_SIMILARITY
    assert second.near_duplicates[0]["title"] == first.title
    assert str(unrelated.public_id) not in ids


def test_propose_ignores_rejected_items_for_duplicates(bank, owner):
    first = memory_item_propose(bank=bank, origin="success", **LOGIN)
    memory_item_reject(item=first, author=owner, reason="wrong")
    second = memory_item_propose(bank=bank, origin="success", **LOGIN)
    assert second.near_duplicates == []


def test_propose_rejects_bad_input(bank):
    with pytest.raises(Invalid, match="title"):
        memory_item_propose(bank=bank, origin="success", title="  ", description="d", content="c")
    with pytest.raises(Invalid, match="origin"):
        memory_item_propose(bank=bank, origin="dream", **LOGIN)
    long = memory_item_propose(bank=bank, origin="success", **{**LOGIN, "title": "x" * 500})
    assert len(long.title) == 200


def test_create_proposed_is_embedded_inline_for_the_duplicate_check(bank, owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        item = memory_item_create(bank=bank, author=owner, **LOGIN)
        # embedded before commit: the one near-duplicate check compares it with the bank's items at once
        assert MemoryItem.objects.get(pk=item.pk).embedding is not None
    assert callbacks == []  # no embedding left for a worker to do
    item.refresh_from_db()
    assert item.embedding_hash == item_embedding_hash(item)
    assert item.created_by == owner
    assert actions(item) == [(1, "created", "proposed")]


def test_create_approved_is_embedded_inline(bank, owner):
    item = memory_item_create(bank=bank, author=owner, status="approved", origin="import", **LOGIN)
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED and item.approved_by == owner and item.approved_at
    assert item.embedding_hash == item_embedding_hash(item)
    with pytest.raises(Invalid):
        memory_item_create(bank=bank, author=owner, status="superseded", **LOGIN)


def test_edit_clears_embedding_writes_version_and_reembeds(
    bank, owner, eager_celery, django_capture_on_commit_callbacks
):
    item = memory_item_propose(bank=bank, origin="success", **LOGIN)
    old_hash = item.embedding_hash
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        memory_item_edit(item=item, author=owner, content="Open the account menu and sign in first.", note="tighter")
    item.refresh_from_db()
    assert item.embedding is None and item.embedding_hash == ""
    assert item.content == "Open the account menu and sign in first."
    assert item.status == ItemStatus.PROPOSED
    versions = list(item.versions.order_by("number"))
    assert [(v.number, v.action, v.author) for v in versions] == [(1, "created", None), (2, "edited", owner)]
    assert versions[1].note == "tighter" and versions[1].content == item.content
    assert versions[0].content == LOGIN["content"]
    # The enqueued task re-embeds with the new text.
    for callback in callbacks:
        callback()
    item.refresh_from_db()
    assert item.embedding is not None
    assert item.embedding_hash == item_embedding_hash(item) != old_hash


def test_edit_without_change_writes_nothing(bank, owner):
    item = memory_item_propose(bank=bank, origin="success", **LOGIN)
    memory_item_edit(item=item, author=owner, title=LOGIN["title"] + "  ", content=None)
    item.refresh_from_db()
    assert item.embedding is not None
    assert item.versions.count() == 1


def test_edit_rejects_empty_title_and_superseded_items(bank, owner):
    item = memory_item_propose(bank=bank, origin="success", **LOGIN)
    with pytest.raises(Invalid, match="title"):
        memory_item_edit(item=item, author=owner, title=" ")
    memory_item_supersede(item=item, reason="relabelled")
    with pytest.raises(Conflict, match="superseded"):
        memory_item_edit(item=item, author=owner, content="new")
