"""The review API (scope ``review``): the queue, one item, approve / reject /
edit through the review services, each decision recorded with the token."""

import json
import uuid

import pytest

from accounts.models import AuditEvent
from memories.embedding.items import memory_item_embed_refresh
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_create, memory_item_edit
from memories.review.decisions import memory_item_approve, memory_item_reject, memory_item_supersede
from reasoningbank_site.errors import StaleVersion
from tests import factories

QUEUE = "/api/v1/review/items"
LESSON = "Check the institution's own pages for opening hours before answering a schedule question."


def url(item, action=""):
    return f"{QUEUE}/{item.public_id}" + (f"/{action}" if action else "")


def post(client, path, body=None, **headers):
    data = "" if body is None else json.dumps(body)
    return client.post(path, data=data, content_type="application/json", **headers)


@pytest.fixture
def review_token(bank):
    return factories.make_token(bank, scopes=("review",), name="triage-bot")


@pytest.fixture
def review(review_token):
    return {"HTTP_AUTHORIZATION": f"Bearer {review_token}"}


@pytest.fixture
def queue(bank, trajectory):
    first = factories.propose_item(bank, trajectory, title="Prefer the official source")
    second = factories.propose_item(
        bank,
        trajectory,
        title="Retry after a 503",
        content="Wait and retry once.",
        origin="failure",
        verdict_label="failure",
    )
    return first, second


def test_ingest_only_token_gets_403_json(client, auth, item):
    for response in (
        client.get(QUEUE, **auth),
        client.get(url(item), **auth),
        post(client, url(item, "approve"), **auth),
    ):
        assert response.status_code == 403
        assert response.json()["code"] == "missing_scope"
        assert "review" in response.json()["detail"]
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED


def test_no_token_is_401_json(client, item):
    response = client.get(QUEUE)
    assert response.status_code == 401
    assert response.json()["code"] == "missing_token"


def test_queue_lists_proposed_items_oldest_first_with_filters(client, review, queue, bank):
    first, second = queue
    approved = factories.propose_item(bank, title="Already decided")
    approved.status = ItemStatus.APPROVED
    approved.save(update_fields=["status"])
    body = client.get(QUEUE, **review).json()
    assert body["count"] == 2
    assert [i["id"] for i in body["items"]] == [str(first.public_id), str(second.public_id)]
    assert body["items"][1]["content"] == "Wait and retry once."
    assert body["items"][1]["origin"] == "failure"

    page = client.get(QUEUE, {"limit": 1, "offset": 1}, **review).json()
    assert page["count"] == 2 and [i["title"] for i in page["items"]] == ["Retry after a 503"]
    failures = client.get(QUEUE, {"verdict": "failure"}, **review).json()
    assert [i["title"] for i in failures["items"]] == ["Retry after a 503"]
    searched = client.get(QUEUE, {"q": "official"}, **review).json()
    assert [i["title"] for i in searched["items"]] == ["Prefer the official source"]
    by_origin = client.get(QUEUE, {"origin": "success"}, **review).json()
    assert [i["title"] for i in by_origin["items"]] == ["Prefer the official source"]


def test_queue_bad_filters_are_422_json(client, review, queue):
    for params in ({"origin": "nonsense"}, {"limit": 0}, {"limit": 101}, {"verdict": "maybe"}, {"date_from": "x"}):
        response = client.get(QUEUE, params, **review)
        assert response.status_code == 422, params
        assert response.json()["code"] == "validation_error"
        assert response.json()["detail"]


def test_one_item_has_sources_and_near_duplicate_content(client, review, bank, trajectory):
    bank.duplicate_threshold = 1.0  # a suggestion, not consolidated into supporting evidence
    bank.save(update_fields=["duplicate_threshold"])
    original = factories.propose_item(bank, trajectory, title="Prefer the official source")
    twin = factories.propose_item(bank, trajectory, title="Prefer the official sources")
    body = client.get(url(twin), **review).json()
    assert body["id"] == str(twin.public_id)
    assert body["sources"] == [str(trajectory.public_id)]
    assert body["cited_steps"][0]["trajectory"] == str(trajectory.public_id)
    assert body["near_duplicate_count"] == 1
    (dup,) = body["near_duplicates"]
    assert dup["id"] == str(original.public_id)
    assert dup["content"] == original.content and dup["similarity"] > 0.9


def test_unknown_and_other_banks_items_are_404_json(client, review, other_bank):
    theirs = factories.propose_item(other_bank, title="Their lesson")
    for item_url in (f"{QUEUE}/{uuid.uuid4()}", url(theirs)):
        for response in (
            client.get(item_url, **review),
            post(client, item_url + "/approve", **review),
            post(client, item_url + "/reject", {"reason": "no"}, **review),
            client.patch(item_url, data=json.dumps({"title": "x"}), content_type="application/json", **review),
        ):
            assert response.status_code == 404
            assert response.json() == {"detail": "No memory item with this id in this bank.", "code": "not_found"}
    theirs.refresh_from_db()
    assert theirs.status == ItemStatus.PROPOSED and theirs.title == "Their lesson"
    assert client.get(f"{QUEUE}/not-a-uuid", **review).status_code == 422


def test_approve_is_audited_as_the_token(client, review, item, bank):
    response = post(client, url(item, "approve"), **review)
    assert response.status_code == 200
    assert response.json()["status"] == "approved"
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED and item.embedding is not None and item.approved_by is None
    event = AuditEvent.objects.get(bank=bank, action="memory_item.approve")
    assert event.actor_user is None and event.actor_token.name == "triage-bot"
    assert event.actor_label.startswith("token rb_")
    version = item.versions.order_by("-number").first()
    assert version.action == "approved" and version.actor_label == event.actor_label
    # the same call with a {} body is the same (idempotent) approval
    again = post(client, url(item, "approve"), {}, **review)
    assert again.status_code == 200 and item.versions.count() == 2


def test_reject_needs_a_reason(client, review, item):
    for body in (None, {}, {"reason": ""}, {"reason": "   "}):
        response = post(client, url(item, "reject"), body, **review)
        assert response.status_code in (400, 422), body
        assert response.json()["detail"], body
    assert "reason" in post(client, url(item, "reject"), {"reason": " "}, **review).json()["detail"]
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED


def test_reject_keeps_the_reason_and_is_audited(client, review, item, bank):
    response = post(client, url(item, "reject"), {"reason": "Too specific to one site."}, **review)
    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    assert response.json()["status_reason"] == "Too specific to one site."
    event = AuditEvent.objects.get(bank=bank, action="memory_item.reject")
    assert event.actor_token is not None and event.after["note"] == "Too specific to one site."


def test_a_refused_transition_is_409_json(client, review, item):
    memory_item_supersede(item=item, reason="replaced")
    for response in (
        post(client, url(item, "approve"), **review),
        post(client, url(item, "reject"), {"reason": "no"}, **review),
        client.patch(url(item), data=json.dumps({"title": "New"}), content_type="application/json", **review),
    ):
        assert response.status_code == 409
        assert response.json()["detail"]
    approved = factories.propose_item(item.bank, title="Served already")
    post(client, url(approved, "approve"), **review)
    rejected = post(client, url(approved, "reject"), {"reason": "late"}, **review)
    assert rejected.status_code == 409 and rejected.json()["code"] == "invalid_transition"


def test_edit_changes_text_and_is_audited(client, review, item, bank):
    body = {"title": "Check the official site first", "tags": ["Web", "schedules"], "note": "clearer"}
    response = client.patch(url(item), data=json.dumps(body), content_type="application/json", **review)
    assert response.status_code == 200
    data = response.json()
    assert data["title"] == "Check the official site first" and data["tags"] == ["schedules", "web"]
    assert data["status"] == "proposed" and data["description"] == item.description
    item.refresh_from_db()
    assert item.title == "Check the official site first"
    event = AuditEvent.objects.get(bank=bank, action="memory_item.edit")
    assert event.actor_token is not None and event.before["title"] == "Prefer the official source"


def test_edit_with_invalid_text_is_422_json(client, review, item):
    response = client.patch(url(item), data=json.dumps({"title": "  "}), content_type="application/json", **review)
    assert response.status_code == 422
    assert response.json()["detail"] == "A memory item needs a title."
    assert MemoryItem.objects.get(pk=item.pk).title == "Prefer the official source"


def test_the_item_page_names_the_token_that_decided(client, owner, review, item, bank):
    post(client, url(item, "reject"), {"reason": "Not general."}, **review)
    client.force_login(owner)
    page = client.get(f"/banks/{bank.public_id}/items/{item.public_id}/").content.decode()
    assert "<strong>rejected</strong> by token rb_" in page and "(triage-bot)" in page


def test_the_token_form_offers_the_review_scope(client, owner, bank):
    client.force_login(owner)
    page = client.get(f"/banks/{bank.public_id}/tokens/").content.decode()
    assert 'value="review"' in page
    client.post(f"/banks/{bank.public_id}/tokens/new/", {"name": "triage", "scopes": ["review"]})
    assert bank.tokens.get(name="triage").scopes == ["review"]


def test_the_queue_costs_the_same_queries_for_many_items(client, review, bank, django_assert_num_queries):
    factories.bulk_items(bank, 60)
    with django_assert_num_queries(5):  # the token, its rate count, and the queue page's three
        body = client.get(QUEUE, {"limit": 50}, **review).json()
    assert body["count"] == 60 and len(body["items"]) == 50


def test_a_decision_on_a_changed_item_is_refused_with_the_other_decision(client, review, queue, owner):
    """The API takes part in the reviewers' optimistic concurrency: the
    version it read, sent back as seen_version, refuses a stale decision."""
    item = queue[0]
    listed = client.get(QUEUE, **review).json()["items"]
    seen = next(row["version"] for row in listed if row["id"] == str(item.public_id))
    assert client.get(url(item), **review).json()["version"] == seen
    memory_item_reject(item=item, author=owner, reason="Too vague.")

    response = post(client, url(item, "approve"), {"seen_version": seen}, **review)

    assert response.status_code == 409
    assert response.json()["code"] == "stale_version"
    assert "Rejected by" in response.json()["detail"]
    item.refresh_from_db()
    assert item.status == ItemStatus.REJECTED


def test_approving_a_duplicate_of_an_approved_item_needs_confirm_duplicate(client, review, bank, owner):
    served = memory_item_create(
        bank=bank, title="Prefer the official source", description="Schedules.", content=LESSON, author=owner
    )
    memory_item_approve(item=served, author=owner)
    again = memory_item_create(bank=bank, title="Type dates", description="Forms.", content="Type ISO.", author=owner)
    # edited into the same lesson (a new twin would be recorded on the approved one as seen again)
    again = memory_item_edit(
        item=again, author=owner, title="Prefer the official source", description="Schedules.", content=LESSON
    )
    memory_item_embed_refresh(item_id=again.pk)  # what the worker does after the edit

    again.refresh_from_db()
    refused = post(client, url(again, "approve"), {}, **review)
    assert refused.status_code == 409
    assert refused.json()["code"] == "duplicate_needs_confirmation"
    again.refresh_from_db()
    assert again.status == ItemStatus.PROPOSED

    confirmed = post(client, url(again, "approve"), {"confirm_duplicate": True}, **review)
    assert confirmed.status_code == 200
    assert confirmed.json()["status"] == "approved"


def test_a_stale_decision_names_the_token_that_changed_the_item(client, review, queue, owner):
    item = queue[0]
    seen = client.get(url(item), **review).json()["version"]
    assert post(client, url(item, "reject"), {"reason": "Too vague."}, **review).status_code == 200

    with pytest.raises(StaleVersion) as refused:
        memory_item_approve(item=item, author=owner, seen_version=seen)

    assert refused.value.code == "stale_version"
    assert "the pipeline" not in refused.value.message
    assert "Rejected by token rb_" in refused.value.message and "(triage-bot)" in refused.value.message
