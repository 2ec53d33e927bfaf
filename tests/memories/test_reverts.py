"""Taking a decision back: memory_item_revert (the toast's Undo and
the history's Revert), the undo offers the decision views make, and the focus
view keeping the queue's filters. Services against the real database; views
through Django's test client."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from accounts.models import AuditEvent
from accounts.teams.banks import bank_update_settings
from memories.items.models import ItemOrigin, ItemStatus, MemoryItem
from memories.items.services import memory_item_create, memory_item_edit
from memories.review.decisions import memory_item_approve, memory_item_archive, memory_item_flag, memory_item_reject
from memories.review.reverts import memory_item_last_decision, memory_item_revert
from reasoningbank_site.errors import Conflict, NotFound

HTMX = {"HTTP_HX_REQUEST": "true"}


def _item(bank, title="Check the date format", **kw) -> MemoryItem:
    return memory_item_create(bank=bank, title=title, description="When dates are typed.", content="Type ISO.", **kw)


def _actions(item):
    return list(item.versions.order_by("number").values_list("action", "status"))


def _url(name, bank, item=None):
    kwargs = {"bank_id": bank.public_id}
    if item is not None:
        kwargs["item_id"] = item.public_id
    return reverse(f"memories:{name}", kwargs=kwargs)


# --- the service ------------------------------------------------------------------------


def test_reverting_an_approval_makes_the_item_proposed_again_recorded_and_audited(bank, owner, reviewer):
    item = _item(bank)
    memory_item_approve(item=item, author=reviewer)
    decision = memory_item_last_decision(item=item)
    assert (decision.number, decision.action) == (2, "approved")
    memory_item_revert(item=item, decision=2, author=owner)
    item.refresh_from_db()
    assert (item.status, item.approved_by, item.approved_at) == (ItemStatus.PROPOSED, None, None)
    assert _actions(item) == [("created", "proposed"), ("approved", "approved"), ("reverted", "proposed")]
    version = item.versions.get(number=3)
    assert version.author == owner
    assert version.note == f"reverted the approval of version 2 by {reviewer.get_username()}"
    event = AuditEvent.objects.get(action="memory_item.revert", object_id=str(item.public_id))
    assert event.actor_user == owner
    assert (event.before["status"], event.after["status"]) == ("approved", "proposed")
    assert memory_item_last_decision(item=item) is None  # nothing left to undo


def test_reverting_a_rejection_clears_its_reason(bank, owner):
    item = _item(bank)
    memory_item_reject(item=item, author=owner, reason="Too vague")
    memory_item_revert(item=item, decision=2, author=owner)
    item.refresh_from_db()
    assert (item.status, item.status_reason) == (ItemStatus.PROPOSED, "")


def test_reverting_the_approval_of_a_rejected_item_restores_the_rejection_and_its_reason(bank, owner, reviewer):
    item = _item(bank)
    memory_item_reject(item=item, author=owner, reason="Too vague")
    memory_item_approve(item=item, author=reviewer)
    memory_item_revert(item=item, decision=3, author=reviewer)
    item.refresh_from_db()
    assert (item.status, item.status_reason, item.approved_by) == (ItemStatus.REJECTED, "Too vague", None)


def test_reverting_an_archiving_serves_the_item_again_with_its_approver(
    bank, owner, reviewer, eager_celery, django_capture_on_commit_callbacks
):
    item = _item(bank, status=ItemStatus.APPROVED, author=owner)  # embedded inline
    memory_item_archive(item=item, author=reviewer)
    MemoryItem.objects.filter(pk=item.pk).update(embedding_model="old-model")  # the model changed meanwhile
    with django_capture_on_commit_callbacks(execute=True):
        memory_item_revert(item=item, decision=2, author=reviewer)
    item.refresh_from_db()
    assert (item.status, item.approved_by) == (ItemStatus.APPROVED, owner)
    assert item.embedding_model != "old-model"  # an embed task was enqueued (and ran eagerly)


def test_reverting_the_approval_of_an_archived_item_keeps_the_first_approver(bank, owner, reviewer):
    item = _item(bank, status=ItemStatus.APPROVED, author=owner)
    memory_item_archive(item=item, author=owner)
    memory_item_approve(item=item, author=reviewer)
    memory_item_revert(item=item, decision=3, author=reviewer)
    item.refresh_from_db()
    assert (item.status, item.approved_by) == (ItemStatus.ARCHIVED, owner)


def test_an_edit_after_the_decision_does_not_block_its_revert(bank, owner):
    item = _item(bank)
    memory_item_approve(item=item, author=owner)
    memory_item_edit(item=item, author=owner, title="Type dates as ISO")
    memory_item_revert(item=item, decision=2, author=owner)
    item.refresh_from_db()
    assert (item.status, item.title) == (ItemStatus.PROPOSED, "Type dates as ISO")


def test_a_revert_that_is_no_longer_valid_is_refused_saying_why(bank, owner, reviewer):
    item = _item(bank)
    memory_item_approve(item=item, author=owner)
    memory_item_archive(item=item, author=reviewer)
    with pytest.raises(Conflict, match=rf"approval can no longer be reverted: it was archived by {reviewer.username}"):
        memory_item_revert(item=item, decision=2, author=owner)
    memory_item_revert(item=item, decision=3, author=owner)  # the archiving is the latest: it can go
    with pytest.raises(Conflict, match=rf"archiving can no longer be reverted: it was reverted by {owner.username}"):
        memory_item_revert(item=item, decision=3, author=owner)  # an Undo pressed twice
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED
    assert [a for a, _ in _actions(item)] == ["created", "approved", "archived", "reverted"]


def test_what_is_not_a_decision_cannot_be_reverted(bank, owner):
    item = _item(bank, status=ItemStatus.APPROVED, author=owner)
    with pytest.raises(Conflict, match="not a decision"):
        memory_item_revert(item=item, decision=1, author=owner)  # "created"
    with pytest.raises(NotFound, match="no version 9"):
        memory_item_revert(item=item, decision=9, author=owner)
    memory_item_flag(item=item, reason="Check it again")
    memory_item_approve(item=item, author=owner)  # only clears the flag: approved → approved
    assert memory_item_last_decision(item=item) is None  # so no Undo is offered for it
    with pytest.raises(Conflict, match="changed no status"):
        memory_item_revert(item=item, decision=3, author=owner)
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED


# --- the views --------------------------------------------------------------------------


def test_revert_view_by_role(client, bank, owner, reviewer, viewer):
    item = _item(bank)
    memory_item_approve(item=item, author=owner)
    client.force_login(viewer)
    assert client.post(_url("item_revert", bank, item), {"decision": "2"}).status_code == 403
    client.force_login(reviewer)
    response = client.post(_url("item_revert", bank, item), {"decision": "2"})
    assert response.status_code == 302 and response["Location"] == _url("item_detail", bank, item)
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED


def test_a_refused_revert_shows_the_reason_in_the_panel(client, bank, owner):
    item = _item(bank)
    memory_item_approve(item=item, author=owner)
    memory_item_archive(item=item, author=owner)
    client.force_login(owner)
    html = client.post(_url("item_revert", bank, item), {"decision": "2"}, **HTMX).content.decode()
    assert 'id="item-panel"' in html and "can no longer be reverted" in html
    item.refresh_from_db()
    assert item.status == ItemStatus.ARCHIVED


def test_row_approve_offers_undo_and_undo_answers_the_row_proposed_again(client, bank, reviewer):
    item = _item(bank)
    client.force_login(reviewer)
    queue = _url("review", bank)
    data = {"items": str(item.public_id), "row": "1", "action": "approve", "next": f"{queue}?q=date"}
    html = client.post(queue, data, **HTMX).content.decode()
    assert 'data-status="approved"' in html
    toast = re.search(r'<template>\s*<div id="toast".*?</template>', html, re.S).group(0)
    assert "Approved “Check the date format”." in toast
    assert f'hx-post="{_url("item_revert", bank, item)}"' in toast and 'name="decision" value="2"' in toast
    assert f'hx-target="#item-{item.public_id}"' in toast
    # The row keeps the queue's filters in its links.
    assert f'data-open="{_url("review_focus", bank, item)}?q=date"' in html

    html = client.post(
        _url("item_revert", bank, item), {"decision": "2", "row": "1", "next": f"{queue}?q=date"}, **HTMX
    ).content.decode()
    assert 'data-status="proposed"' in html and "is proposed again" in html
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED


def test_focus_view_decision_offers_undo_on_the_next_page(client, bank, reviewer):
    bank_update_settings(
        bank=bank, actor=None, duplicate_threshold=1.0
    )  # near-identical lessons, kept apart on purpose
    bank.refresh_from_db()
    first, second = _item(bank, "First"), _item(bank, "Second")
    client.force_login(reviewer)
    response = client.post(_url("item_approve", bank, first), {"focus": "1", "queue": ""}, **HTMX)
    assert response["HX-Redirect"] == _url("review_focus", bank, second)
    html = client.get(response["HX-Redirect"]).content.decode()
    toast = re.search(r'<div id="toast".*?</div>', html, re.S).group(0)
    assert "Approved “First”." in toast and "hx-post" not in toast  # a plain form: works without JS
    assert 'name="decision" value="2"' in toast and 'name="focus" value="1"' in toast
    assert "Approved “First”." not in client.get(response["HX-Redirect"]).content.decode()  # offered once

    response = client.post(_url("item_revert", bank, first), {"decision": "2", "focus": "1", "queue": ""})
    assert response["Location"] == _url("review_focus", bank, first)  # back to decide it again
    first.refresh_from_db()
    assert first.status == ItemStatus.PROPOSED


def test_item_page_archive_offers_undo_in_the_panel_answer(client, bank, owner):
    item = _item(bank, status=ItemStatus.APPROVED, author=owner)
    client.force_login(owner)
    html = client.post(_url("item_archive", bank, item), **HTMX).content.decode()
    assert 'id="item-panel"' in html and "Archived “Check the date format”." in html
    assert 'hx-target="#item-panel"' in html and 'name="decision" value="2"' in html
    assert "data-revert" in html  # the history's Revert buttons


def test_focus_view_keeps_the_queue_filters(client, bank, reviewer):
    bank_update_settings(
        bank=bank, actor=None, duplicate_threshold=1.0
    )  # near-identical lessons, kept apart on purpose
    bank.refresh_from_db()
    a = _item(bank, "Imported one", origin=ItemOrigin.IMPORT)
    _item(bank, "Written by hand")  # between them in the queue, but filtered out
    b = _item(bank, "Imported two", origin=ItemOrigin.IMPORT)
    client.force_login(reviewer)
    html = client.get(_url("review_focus", bank, a), {"origin": "import", "page": "2"}).content.decode()
    assert f'href="{_url("review_focus", bank, b)}?origin=import"' in html  # Next skips the hand-written one
    assert f'data-queue href="{_url("review", bank)}?origin=import"' in html  # "← Queue" keeps them
    assert 'name="queue" value="origin=import"' in html
    html = client.get(_url("review_focus", bank, b), {"origin": "import"}).content.decode()
    assert f'data-prev href="{_url("review_focus", bank, a)}?origin=import"' in html
    assert "last in the queue" in html

    response = client.post(_url("item_approve", bank, a), {"focus": "1", "queue": "origin=import"})
    assert response["Location"] == f"{_url('review_focus', bank, b)}?origin=import"
    response = client.post(_url("item_reject", bank, b), {"focus": "1", "queue": "origin=import", "reason": "No"})
    assert response["Location"] == f"{_url('review', bank)}?origin=import"
    assert dict(MemoryItem.objects.filter(bank=bank).values_list("title", "status")) == {
        "Imported one": "approved",
        "Written by hand": "proposed",
        "Imported two": "rejected",
    }
