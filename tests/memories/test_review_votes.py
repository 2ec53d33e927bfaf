"""Several independent decisions per item (memories.review.votes):
a vote stays hidden until all are in; agreement applies the decision,
disagreement goes to an owner or admin; and the agreement measures
(Cohen's kappa per pair, Fleiss' kappa per bank) on the Reviewers page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.items.models import ItemStatus
from memories.review.agreement import bank_agreement, cohen_kappa, fleiss_kappa
from memories.review.policy import review_policy_update
from memories.review.policy_models import ReviewVote
from memories.review.votes import review_vote_cast
from reasoningbank_site.errors import Conflict, Invalid
from tests.factories import bulk_items


@pytest.fixture
def two_needed(bank, owner):
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=2)


def focus(bank, item):
    return reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})


def test_two_agreeing_decisions_approve_and_the_first_is_hidden_meanwhile(client, bank, item, alice, bob, two_needed):
    client.force_login(alice)
    response = client.post(
        reverse("memories:item_approve", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
    )
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED
    client.force_login(bob)
    html = client.get(focus(bank, item)).content.decode()
    assert "needs 2 independent decisions" in html and "alice" not in html.split("data-votes", 1)[1][:400]
    review_vote_cast(item=item, author=bob, decision="approve")
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED and item.approved_by == bob
    html = client.get(focus(bank, item)).content.decode()
    assert "alice: <strong>approve</strong>" in html and "bob: <strong>approve</strong>" in html


def test_disagreement_goes_to_an_owner_who_decides(client, bank, item, alice, bob, owner, two_needed):
    review_vote_cast(item=item, author=alice, decision="approve")
    review_vote_cast(item=item, author=bob, decision="reject", reason="Too specific")
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED
    assert item.needs_review_reason.startswith("Reviewers disagree (1 approve, 1 reject)")
    with pytest.raises(Conflict):
        review_vote_cast(item=item, author=alice, decision="reject", reason="changed my mind")
    client.force_login(owner)
    assert "Reviewers disagree" in client.get(focus(bank, item)).content.decode()
    client.post(reverse("memories:item_approve", kwargs={"bank_id": bank.public_id, "item_id": item.public_id}))
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED and item.approved_by == owner


def test_votes_are_checked(bank, item, alice, two_needed):
    with pytest.raises(Invalid, match="needs a reason"):
        review_vote_cast(item=item, author=alice, decision="reject")
    with pytest.raises(Invalid):
        review_vote_cast(item=item, author=alice, decision="maybe")
    review_vote_cast(item=item, author=alice, decision="approve")
    with pytest.raises(Conflict, match="already decided"):
        review_vote_cast(item=item, author=alice, decision="approve")
    assert ReviewVote.objects.count() == 1


def test_the_queue_records_a_row_decision_as_a_vote(client, bank, alice, two_needed):
    (item,) = bulk_items(bank, 1)
    client.force_login(alice)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    response = client.post(url, {"action": "approve", "items": [str(item.public_id)]}, follow=True)
    assert "given your decision (approve" in response.content.decode()
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED and ReviewVote.objects.get().user == alice


def test_cohen_kappa_of_a_known_table():
    kappa = cohen_kappa([(True, True), (True, False), (False, False), (False, False)])
    assert kappa.value == pytest.approx(0.5) and kappa.n == 4
    assert kappa.low < 0.5 < kappa.high
    assert cohen_kappa([(True, True), (True, True)]).value is None  # both always said yes: undefined


def test_fleiss_kappa_perfect_and_chance():
    perfect = fleiss_kappa([(2, 2), (0, 2), (2, 2), (0, 2)])
    assert perfect.value == pytest.approx(1.0)
    split = fleiss_kappa([(1, 2), (1, 2), (1, 2), (1, 2)])
    assert split.value == pytest.approx(-1.0)


def test_the_reviewers_page_shows_agreement_per_pair_and_per_bank(client, bank, owner, alice, bob, two_needed):
    items = bulk_items(bank, 4)
    for item, (a, b) in zip(
        items, [("approve", "approve"), ("reject", "reject"), ("approve", "reject"), ("reject", "reject")]
    ):
        review_vote_cast(item=item, author=alice, decision=a, reason="r")
        review_vote_cast(item=item, author=bob, decision=b, reason="r")
    agreement = bank_agreement(bank=bank)
    assert [(p.first, p.second, p.kappa.n, p.agree) for p in agreement.pairs] == [("alice", "bob", 4, 3)]
    client.force_login(owner)
    html = client.get(reverse("trajectories:reviewers", kwargs={"bank_id": bank.public_id})).content.decode()
    assert "alice · bob" in html and agreement.pairs[0].kappa.text in html
    assert f"data-fleiss>{agreement.fleiss.text}<" in html


def test_conflicts_have_a_queue_filter_for_the_owner(client, bank, owner, alice, bob, two_needed):
    disputed, agreed = bulk_items(bank, 2)
    for item in (disputed, agreed):
        review_vote_cast(item=item, author=alice, decision="approve")
    review_vote_cast(item=disputed, author=bob, decision="reject", reason="too narrow")
    client.force_login(owner)
    html = client.get(
        reverse("memories:review", kwargs={"bank_id": bank.public_id}), {"conflict": "on"}
    ).content.decode()
    assert f'id="item-{disputed.public_id}"' in html and f'id="item-{agreed.public_id}"' not in html


def test_a_queue_row_shows_the_reviewers_own_decision_only(client, bank, alice, bob, two_needed):
    (item,) = bulk_items(bank, 1)
    review_vote_cast(item=item, author=alice, decision="approve")
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    client.force_login(alice)
    assert "you: approve</span>" in client.get(url).content.decode()
    client.force_login(bob)
    assert "data-my-vote" not in client.get(url).content.decode()


def test_taking_back_a_decision_on_a_conflict_returns_it_to_the_owner(bank, item, alice, bob, owner, two_needed):
    from memories.review.decisions import memory_item_reject
    from memories.review.reverts import memory_item_revert

    review_vote_cast(item=item, author=alice, decision="approve")
    review_vote_cast(item=item, author=bob, decision="reject", reason="Too specific")
    rejected = memory_item_reject(item=item, author=owner, reason="Owner: too specific")
    assert rejected.needs_review_reason == ""  # the owner's decision settles the conflict
    decision = item.versions.order_by("-number").first().number
    reverted = memory_item_revert(item=item, decision=decision, author=owner)
    assert reverted.status == ItemStatus.PROPOSED
    assert reverted.needs_review_reason.startswith("Reviewers disagree (1 approve, 1 reject)")
    with pytest.raises(Conflict, match="an owner or admin resolves it"):
        review_vote_cast(item=item, author=alice, decision="reject", reason="changed my mind")


def test_taking_back_the_reviewers_agreement_flags_it_for_an_owner(bank, item, alice, bob, owner, two_needed):
    from memories.review.reverts import memory_item_revert

    review_vote_cast(item=item, author=alice, decision="approve")
    review_vote_cast(item=item, author=bob, decision="approve")
    decision = item.versions.order_by("-number").first().number
    reverted = memory_item_revert(item=item, decision=decision, author=owner)
    assert reverted.status == ItemStatus.PROPOSED
    assert reverted.needs_review_reason.startswith("All 2 reviewers decided to approve; that decision was taken back")
