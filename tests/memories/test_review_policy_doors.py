"""Every door that makes an item servable follows a review policy of several
decisions per item: a reviewer's "Approve now" is her first vote, a reviewer
or a review token cannot change an approved item's text, approve, reject or
import a release alone; owners and admins decide outright."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_create, memory_item_edit
from memories.review.decisions import memory_item_approve, memory_item_reject
from memories.review.policy import review_policy_update
from memories.review.policy_models import ReviewVote
from memories.review.votes import review_vote_cast
from reasoningbank_site.errors import Forbidden
from tests import factories
from tests.memories.lessons import LOGIN

QUEUE = "/api/v1/review/items"


@pytest.fixture
def two_needed(bank, owner):
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=2)


@pytest.fixture
def review_token(bank):
    return factories.make_token(bank, scopes=("review",), name="triage-bot")


@pytest.fixture
def review(review_token):
    return {"HTTP_AUTHORIZATION": f"Bearer {review_token}"}


@pytest.fixture
def served(bank, owner):
    return memory_item_create(bank=bank, author=owner, status=ItemStatus.APPROVED, **LOGIN)


def test_a_reviewers_approve_now_is_the_first_of_the_decisions(bank, alice, bob, two_needed):
    item = memory_item_create(bank=bank, author=alice, status=ItemStatus.APPROVED, **LOGIN)

    assert item.status == ItemStatus.PROPOSED
    assert list(ReviewVote.objects.filter(item=item).values_list("user", "decision")) == [(alice.pk, "approve")]
    review_vote_cast(item=item, author=bob, decision="approve")
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED and item.approved_by == bob


def test_an_owners_approve_now_still_decides(bank, owner, two_needed):
    item = memory_item_create(bank=bank, author=owner, status=ItemStatus.APPROVED, **LOGIN)
    assert item.status == ItemStatus.APPROVED and not ReviewVote.objects.exists()


def test_a_reviewer_cannot_change_the_text_of_a_served_item_alone(bank, owner, alice, served, two_needed):
    with pytest.raises(Forbidden, match="2 independent decisions"):
        memory_item_edit(item=served, author=alice, content="Sign in with the admin account instead.")
    served.refresh_from_db()
    assert served.content == LOGIN["content"]
    memory_item_edit(item=served, author=alice, tags=["login"])  # tags are not what is served
    memory_item_edit(item=served, author=owner, content="Sign in first; the orders page needs a session.")
    served.refresh_from_db()
    assert served.content == "Sign in first; the orders page needs a session." and served.tags == ["login"]


def test_a_token_cannot_approve_or_reject_alone(bank, item, review_token, two_needed):
    token = bank.tokens.get(name="triage-bot")
    with pytest.raises(Forbidden):
        memory_item_approve(item=item, author=None, token=token)
    with pytest.raises(Forbidden):
        memory_item_reject(item=item, author=None, token=token, reason="No.")
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED


def test_the_approve_service_refuses_a_reviewer_deciding_alone(bank, alice, item, two_needed):
    with pytest.raises(Forbidden):
        memory_item_approve(item=item, author=alice)
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED


def test_one_decision_per_item_leaves_every_door_as_it_was(bank, alice, item, review_token):
    token = bank.tokens.get(name="triage-bot")
    created = memory_item_create(bank=bank, author=alice, status=ItemStatus.APPROVED, **LOGIN)
    assert created.status == ItemStatus.APPROVED
    memory_item_edit(item=created, author=alice, content="Sign in first.")
    memory_item_approve(item=item, author=None, token=token)
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED


# --- the page and the API ------------------------------------------------------------------


def test_the_new_item_page_records_a_reviewers_approve_now_as_her_vote(client, bank, alice, two_needed):
    client.force_login(alice)
    url = reverse("memories:item_create", kwargs={"bank_id": bank.public_id})
    assert "counts as its first decision" in client.get(url).content.decode()
    response = client.post(url, {**LOGIN, "tags": "", "approve_now": "on"}, follow=True)

    item = MemoryItem.objects.get(bank=bank)
    assert item.status == ItemStatus.PROPOSED and ReviewVote.objects.get(item=item).user == alice
    assert "with your approve as its first decision" in response.content.decode()


def test_the_item_page_refuses_a_reviewers_edit_of_a_served_item(client, bank, alice, served, two_needed):
    client.force_login(alice)
    url = reverse("memories:item_edit", kwargs={"bank_id": bank.public_id, "item_id": served.public_id})
    response = client.post(
        url, {**LOGIN, "content": "Sign in with the admin account instead.", "tags": ""}, follow=True
    )
    assert "cannot change an approved item" in response.content.decode()
    served.refresh_from_db()
    assert served.content == LOGIN["content"] and served.status == ItemStatus.APPROVED


def test_the_review_api_answers_403_json_instead_of_deciding_alone(client, bank, item, served, review, two_needed):
    def post(path, body, method="post"):
        call = getattr(client, method)
        return call(f"{QUEUE}/{path}", data=json.dumps(body), content_type="application/json", **review)

    for response in (
        post(f"{item.public_id}/approve", {"confirm_risks": True}),
        post(f"{item.public_id}/reject", {"reason": "Too vague."}),
        post(f"{served.public_id}", {"content": "Sign in with the admin account instead."}, method="patch"),
    ):
        assert response.status_code == 403, response.content
        body = response.json()
        assert body["code"] == "several_decisions_required" and "owner or admin" in body["detail"]
    item.refresh_from_db()
    served.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED and served.content == LOGIN["content"]
