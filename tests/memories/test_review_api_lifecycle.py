"""The review API's part for what follows serving: the queue's state filter,
an item's repeats, validity and staleness in its answer, and the decisions
reopen, archive as wrong, keep and supersede, with JSON errors."""

from __future__ import annotations

import uuid

import pytest

from memories.items.models import ItemStatus, MemoryItem
from memories.learning.policy import bank_learning_update
from memories.learning.retirement import ItemEffect, memory_items_outcomes_record
from memories.review.decisions import memory_item_approve, memory_item_merge, memory_item_reject
from tests import factories
from tests.factories import make_done_trajectory, propose_item

QUEUE = "/api/v1/review/items"
ITEM = "/api/v1/review/items/{}"
REASON = "Official pages of this city are months out of date."


@pytest.fixture
def review(bank):
    return {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(bank, scopes=('review',))}"}


def _post(client, url, review, body=None):
    return client.post(url, body or {}, content_type="application/json", **review)


def test_a_rejected_items_repeats_and_reopen(client, bank, owner, trajectory, review):
    rejected = propose_item(bank, trajectory, title="Prefer the official source")
    memory_item_reject(item=rejected, author=owner, reason=REASON)
    later = make_done_trajectory(bank)
    propose_item(bank, later, title="Prefer official sources")

    listed = client.get(QUEUE, {"state": "repeated"}, **review).json()
    assert [i["id"] for i in listed["items"]] == [str(rejected.public_id)] and listed["count"] == 1
    assert client.get(QUEUE, **review).json()["count"] == 0  # nothing new was queued
    body = client.get(ITEM.format(rejected.public_id), **review).json()
    assert body["status_reason"] == REASON
    (repeat,) = body["repeats"]
    assert repeat["title"] == "Prefer official sources" and repeat["trajectories"] == [str(later.public_id)]

    reopened = _post(client, ITEM.format(rejected.public_id) + "/reopen", review, {"note": "seen again"})
    assert reopened.status_code == 200 and reopened.json()["status"] == "proposed"
    again = _post(client, ITEM.format(rejected.public_id) + "/reopen", review)
    assert again.status_code == 409 and again.json()["code"] == "invalid_transition"
    bad = client.get(QUEUE, {"state": "nonsense"}, **review)
    assert bad.status_code == 422 and "state" in bad.json()["detail"]


def test_archive_as_wrong_keep_and_supersede(client, bank, owner, trajectory, review):
    item = propose_item(bank, trajectory, title="Prefer the official source")
    memory_item_approve(item=item, author=owner)
    other = propose_item(bank, trajectory, title="Type dates into date pickers", content="Type YYYY-MM-DD.")
    url = ITEM.format(item.public_id)

    missing = _post(client, url + "/archive-as-wrong", review)
    assert missing.status_code == 422 and "reason" in missing.json()["detail"]
    memory_items_outcomes_record(
        bank=bank, effects=[ItemEffect(str(item.public_id), -0.4, 80, hurts=True, evidence={"difference": -0.4})]
    )
    body = client.get(url, **review).json()
    assert body["retirement_reason"].startswith("Impact says") and body["retirement_evidence"]["difference"] == -0.4
    assert [i["id"] for i in client.get(QUEUE, {"state": "retirement"}, **review).json()["items"]] == [
        str(item.public_id)
    ]
    kept = _post(client, url + "/keep", review, {"note": "right for us"}).json()
    assert kept["retirement_reason"] == "" and kept["suspended"] is False

    unknown = _post(client, url + "/supersede", review, {"replacement": str(uuid.uuid4())})
    assert unknown.status_code == 422 and "replacement" in unknown.json()["detail"]
    itself = _post(client, url + "/supersede", review, {"replacement": str(item.public_id)})
    assert itself.status_code == 422
    done = _post(client, url + "/supersede", review, {"replacement": str(other.public_id)}).json()
    assert done["status"] == "superseded" and done["superseded_by"] == str(other.public_id)

    wrong = _post(client, ITEM.format(other.public_id) + "/archive-as-wrong", review, {"reason": "wrong"})
    assert wrong.status_code == 409  # only an approved item is archived as wrong
    assert MemoryItem.objects.get(pk=other.pk).status == ItemStatus.PROPOSED


def test_archive_as_wrong_is_recorded_with_the_token(client, bank, owner, trajectory, review):
    item = memory_item_approve(item=propose_item(bank, trajectory, title="Click Save twice"), author=owner)

    done = _post(client, ITEM.format(item.public_id) + "/archive-as-wrong", review, {"reason": "one click saves"})

    assert done.status_code == 200 and done.json()["archived_as_wrong"] is True
    version = MemoryItem.objects.get(pk=item.pk).versions.order_by("number").last()
    assert version.action == "archived-as-wrong" and version.author_id is None and version.actor_token_id is not None


def test_an_items_answer_leads_with_its_state_and_names_what_it_was_merged_into(client, bank, owner, review):
    item = memory_item_approve(item=propose_item(bank, title="Sign in before listing orders"), author=owner)
    bank_learning_update(bank=bank, actor=owner, suspend_when_hurting=True)
    memory_items_outcomes_record(bank=bank, effects=[ItemEffect(str(item.public_id), -0.4, 78, hurts=True)])
    item.refresh_from_db()
    body = client.get(ITEM.format(item.public_id), **review).json()
    assert body["status"] == "approved" and body["suspended"] is True  # the fields as they were
    assert body["state"] == "suspended" and body["state_reason"] == f"Proposed for retirement: {item.retirement_reason}"

    twin = propose_item(bank, title="Book tables by phone", content="Call the restaurant first.")
    kept = memory_item_approve(
        item=propose_item(bank, title="Search invoices", content="Search by number."), author=owner
    )
    memory_item_merge(item=twin, into=kept, author=owner)
    body = client.get(ITEM.format(twin.public_id), **review).json()
    assert (body["status"], body["state"], body["superseded_by"]) == ("superseded", "merged", str(kept.public_id))
