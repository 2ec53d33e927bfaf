"""Who gives an item's several decisions (memories.review.seats):
round-robin deals each item to N reviewers in turn and only they decide;
claimed lets reviewers take places, up to N per item; owners and admins
decide outright either way; places of departed reviewers are freed."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import AuditEvent, Membership, Role
from memories.items.models import ItemStatus, MemoryItem
from memories.review.decisions import memory_item_approve
from memories.review.policy import review_policy_update
from memories.review.policy_models import Distribution, ReviewPolicy, ReviewSeat, SeatSource
from memories.review.seats import review_claim, review_claim_next, review_deal, review_release
from memories.review.votes import review_vote_cast
from reasoningbank_site.errors import Conflict, Invalid, NotFound
from tests import factories
from tests.factories import bulk_items


@pytest.fixture
def carol(team):
    return factories.make_member(team, Role.REVIEWER, user=factories.make_user("carol"))


def policy(bank, owner, distribution, n=2):
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=n, distribution=distribution)


def holders(item) -> set[str]:
    return set(ReviewSeat.objects.filter(item=item).values_list("user__username", flat=True))


def queue(bank):
    return reverse("memories:review", kwargs={"bank_id": bank.public_id})


def focus(bank, item):
    return reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})


def test_round_robin_deals_each_item_to_two_of_three_reviewers_evenly(bank, owner, alice, bob, carol):
    items = bulk_items(bank, 6)
    policy(bank, owner, Distribution.ROUND_ROBIN)  # saving a round-robin policy deals the waiting items
    load = Counter(ReviewSeat.objects.filter(item__bank=bank).values_list("user__username", flat=True))
    assert load == {"alice": 4, "bob": 4, "carol": 4}
    assert all(len(holders(item)) == 2 for item in items)
    assert review_deal(bank=bank) == 0  # dealt once: looking again deals nothing
    assert set(ReviewSeat.objects.values_list("source", flat=True)) == {SeatSource.DEALT}
    owner_seats = ReviewSeat.objects.filter(user=owner)
    assert not owner_seats.exists()  # owners and admins decide outright: never dealt


def test_only_the_reviewers_an_item_is_dealt_to_decide_on_it(bank, owner, alice, bob, carol, item):
    policy(bank, owner, Distribution.ROUND_ROBIN)
    dealt = holders(item)
    outsider = {"alice": alice, "bob": bob, "carol": carol}[({"alice", "bob", "carol"} - dealt).pop()]
    with pytest.raises(Conflict, match=r"dealt to .* theirs to decide"):
        review_vote_cast(item=item, author=outsider, decision="approve")
    first, second = (u for u in (alice, bob, carol) if u.get_username() in dealt)
    review_vote_cast(item=item, author=first, decision="approve")
    review_vote_cast(item=item, author=second, decision="approve")
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED
    other = factories.propose_item(bank, title="Another lesson")
    memory_item_approve(item=other, author=owner)  # the owner decides outright, seat or not
    other.refresh_from_db()
    assert other.status == ItemStatus.APPROVED


def test_a_new_item_is_dealt_when_the_queue_is_opened(client, bank, owner, alice, bob):
    policy(bank, owner, Distribution.ROUND_ROBIN)
    item = factories.propose_item(bank)  # distilled after the policy: nobody has looked since
    assert not holders(item)
    client.force_login(alice)
    html = client.get(queue(bank)).content.decode()
    assert holders(item) == {"alice", "bob"}
    assert 'data-seating="round_robin"' in html and "for your decision" in html
    mine = client.get(queue(bank), {"assigned": "me"}).content.decode()
    assert str(item.public_id) in mine
    review_vote_cast(item=item, author=alice, decision="approve")
    mine = client.get(queue(bank), {"assigned": "me"}).content.decode()
    assert str(item.public_id) not in mine  # decided: no longer waiting for alice


def test_a_departed_reviewers_places_are_dealt_again(bank, owner, alice, bob, carol):
    items = bulk_items(bank, 3)
    policy(bank, owner, Distribution.ROUND_ROBIN)
    decided = next(i for i in items if "carol" in holders(i))
    review_vote_cast(item=decided, author=carol, decision="approve")
    Membership.objects.filter(user=carol).update(role=Role.VIEWER)
    review_deal(bank=bank)
    for item in items:
        expected = {"alice", "bob", "carol"} if item == decided else {"alice", "bob"}
        assert holders(item) <= expected and len(holders(item)) >= 2
    assert "carol" in holders(decided)  # her decision counts: her place stays


def test_giving_up_a_dealt_place_deals_it_on(bank, owner, alice, bob, carol, item):
    policy(bank, owner, Distribution.ROUND_ROBIN)
    holder = next(u for u in (alice, bob, carol) if u.get_username() in holders(item))
    membership = Membership.objects.get(user=holder)
    review_release(item=item, holder=holder, actor=holder, actor_membership=membership)
    assert holder.get_username() not in holders(item) and len(holders(item)) == 2
    with pytest.raises(NotFound):
        review_release(item=item, holder=holder, actor=holder, actor_membership=membership)
    other = next(u for u in (alice, bob, carol) if u.get_username() in holders(item))
    with pytest.raises(Invalid, match="owners and admins"):
        review_release(item=item, holder=other, actor=holder, actor_membership=membership)
    review_vote_cast(item=item, author=other, decision="approve")
    with pytest.raises(Conflict, match="decision stands"):
        review_release(item=item, holder=other, actor=owner, actor_membership=Membership.objects.get(user=owner))


def test_claims_take_the_free_places_and_refuse_the_rest(bank, owner, alice, bob, carol, item):
    policy(bank, owner, Distribution.CLAIM)
    assert review_claim(item=item, user=alice).source == SeatSource.CLAIMED
    review_claim(item=item, user=alice)  # claiming twice is a no-op
    review_vote_cast(item=item, author=bob, decision="approve")  # a decision on a free place claims it
    assert holders(item) == {"alice", "bob"}
    with pytest.raises(Conflict, match="claimed by alice and bob"):
        review_claim(item=item, user=carol)
    with pytest.raises(Conflict, match="claimed by alice and bob"):
        review_vote_cast(item=item, author=carol, decision="approve")
    review_vote_cast(item=item, author=alice, decision="approve")
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED


def test_claim_next_takes_the_oldest_free_items(bank, owner, alice, bob, carol):
    items = bulk_items(bank, 4)
    policy(bank, owner, Distribution.CLAIM)
    assert review_claim_next(bank=bank, user=alice, count=3) == 3
    assert review_claim_next(bank=bank, user=alice, count=3) == 1  # one left she holds no place on
    assert review_claim_next(bank=bank, user=bob, count=10) == 4
    assert review_claim_next(bank=bank, user=carol, count=10) == 0  # every item has its two places taken
    assert [len(holders(i)) for i in items] == [2, 2, 2, 2]
    with pytest.raises(Invalid):
        review_claim_next(bank=bank, user=carol, count=0)
    with pytest.raises(Conflict, match="Only the team's reviewers"):
        review_claim_next(bank=bank, user=owner, count=1)


def test_claims_are_refused_when_the_policy_does_not_distribute_by_claim(bank, owner, alice, item):
    policy(bank, owner, Distribution.OPEN)
    with pytest.raises(Conflict, match="not claimed"):
        review_claim(item=item, user=alice)


def test_the_queue_and_focus_view_claim_and_give_up(client, bank, owner, alice, bob, item):
    policy(bank, owner, Distribution.CLAIM)
    client.force_login(alice)
    html = client.get(focus(bank, item)).content.decode()
    assert 'data-seats="claim"' in html and "Nobody has claimed it yet." in html and "data-claim" in html
    response = client.post(reverse("memories:review_claim_batch", kwargs={"bank_id": bank.public_id}))
    assert response.status_code == 302 and response["Location"].endswith("?assigned=me")
    assert holders(item) == {"alice"}
    html = client.get(focus(bank, item)).content.decode()
    assert 'data-seat="alice"' in html and "Give up my place" in html
    release = reverse("memories:review_release_item", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
    client.post(release, {"next": focus(bank, item)})
    assert not holders(item)
    client.force_login(bob)
    claim = reverse("memories:review_claim_item", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
    client.post(claim)
    assert holders(item) == {"bob"}
    client.force_login(alice)  # a reviewer cannot release bob's place
    response = client.post(release, {"holder": "bob"}, follow=True)
    assert "Only owners and admins" in response.content.decode() and holders(item) == {"bob"}
    client.force_login(owner)
    client.post(release, {"holder": "bob"})
    assert not holders(item)
    event = AuditEvent.objects.get(action="review_seat.release")
    assert (event.actor_user, event.before) == (owner, {"holder": "bob"})


def test_the_policy_page_warns_when_the_team_has_too_few_reviewers(client, bank, owner, alice):
    client.force_login(owner)
    url = reverse("memories:review_policy", kwargs={"bank_id": bank.public_id})
    response = client.post(url, {"guidelines": "", "decisions_required": "2", "distribution": "round_robin"})
    assert response.status_code == 302
    html = client.get(url).content.decode()
    assert "dealt to 2 reviewers in turn" in html and "The team has 1 reviewer" in html
    response = client.post(url, {"guidelines": "", "decisions_required": "2", "distribution": "lottery"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()


def test_after_a_whole_deal_a_look_deals_only_what_changed(bank, owner, alice, bob, carol):
    items = bulk_items(bank, 4)
    policy(bank, owner, Distribution.ROUND_ROBIN)
    MemoryItem.objects.filter(bank=bank).update(updated_at=timezone.now() - timedelta(hours=1))  # past the overlap
    old = items[0]
    ReviewSeat.objects.filter(item=old).delete()  # not a change of the item: an incremental look skips it
    assert review_deal(bank=bank) == 0
    old.save()  # changed (as any decision, edit or return to proposed does): looked at again
    assert review_deal(bank=bank) == 2 and len(holders(old)) == 2
    ReviewSeat.objects.filter(item=old).delete()
    Membership.objects.filter(user=carol).update(role=Role.VIEWER)  # the reviewers changed: a whole deal
    carols = ReviewSeat.objects.filter(user=carol).count()
    assert review_deal(bank=bank) == 2 + carols  # old's places, and carol's dealt again
    assert all(holders(item) == {"alice", "bob"} for item in items)


def test_the_focus_views_place_forms_come_back_to_the_item(client, bank, owner, alice, bob, item):
    policy(bank, owner, Distribution.ROUND_ROBIN)
    client.force_login(alice)
    # A panel answering an htmx action (here an edit) posts its place forms back to the item, not to the action.
    edit = reverse("memories:item_edit", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
    fields = {"title": item.title, "description": item.description, "content": item.content, "tags": "", "note": ""}
    html = client.post(edit, fields, HTTP_HX_REQUEST="true").content.decode()
    seats = html.split("data-seats", 1)[1].split("</div>", 1)[0]
    assert "Give up my place" in seats and 'name="next" value="/banks/' in seats and "/edit/" not in seats
    review_vote_cast(item=item, author=alice, decision="approve")
    html = client.get(focus(bank, item)).content.decode()
    assert 'data-seat="alice">alice (decided)' in html and "Give up my place" not in html  # a decision stands


def test_switching_round_robin_to_claimed_frees_the_places_nobody_used(bank, owner, alice, bob, carol):
    items = bulk_items(bank, 6)
    policy(bank, owner, Distribution.ROUND_ROBIN)  # every item dealt to two of the three: no free place left
    voted = items[0]
    voter = ReviewSeat.objects.filter(item=voted).order_by("user__username").first().user
    review_vote_cast(item=voted, author=voter, decision="approve")
    policy(bank, owner, Distribution.CLAIM)
    # The dealt places nobody decided on are free again; a decision keeps its place.
    assert {voter.get_username()} == holders(voted)
    assert all(not holders(item) for item in items[1:])
    someone_else = next(u for u in (alice, bob, carol) if u != voter)
    assert review_claim_next(bank=bank, user=someone_else, count=10) == 6
    event = AuditEvent.objects.filter(action="review_policy.update").latest("id")
    assert event.after["places_freed"] == 11  # 12 dealt places, one of them decided on


def test_one_decision_per_item_refuses_round_robin_and_claimed(client, bank, owner, alice, bob):
    for distribution in (Distribution.ROUND_ROBIN, Distribution.CLAIM):
        with pytest.raises(Invalid, match="2 or more decisions"):
            policy(bank, owner, distribution, n=1)
    client.force_login(owner)
    url = reverse("memories:review_policy", kwargs={"bank_id": bank.public_id})
    response = client.post(url, {"guidelines": "", "decisions_required": "1", "distribution": "claim"})
    assert response.status_code == 200 and "only when an item needs 2 or more decisions" in response.content.decode()
    assert not ReviewPolicy.objects.filter(bank=bank).exists()
    assert client.post(url, {"guidelines": "", "decisions_required": "1", "distribution": "open"}).status_code == 302


def test_a_policy_saved_with_one_decision_and_claimed_offers_open_on_its_form(client, bank, owner):
    # A policy saved before one decision refused round-robin and claimed: its form offers Open, so saving the
    # guidelines alone does not stumble on a setting that did nothing.
    ReviewPolicy.objects.create(bank=bank, decisions_required=1, distribution=Distribution.CLAIM)
    client.force_login(owner)
    url = reverse("memories:review_policy", kwargs={"bank_id": bank.public_id})
    html = client.get(url).content.decode()
    assert re.search(r'<option value="open" selected>', html)
    assert (
        client.post(url, {"guidelines": "Be strict.", "decisions_required": "1", "distribution": "open"}).status_code
        == 302
    )
    assert ReviewPolicy.objects.get(bank=bank).distribution == Distribution.OPEN
