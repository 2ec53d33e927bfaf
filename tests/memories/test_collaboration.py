"""Several reviewers on one queue: a decision carries the version
of the item its page showed and loses, naming the other reviewer's decision,
when the item changed since; who has an item open; slices of the queue
assigned to reviewers."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.models import AuditEvent
from memories.items.consolidation import Sighting, memory_items_support_record
from memories.items.models import ItemStatus, MemoryItem, MemoryItemVersion
from memories.items.services import memory_item_edit
from memories.items.versions import item_lock, item_version_record
from memories.review.collaboration import item_current_version, review_assignment_create, review_presence_touch
from memories.review.decisions import (
    memory_item_approve,
    memory_item_archive,
    memory_item_keep_both,
    memory_item_merge,
    memory_item_reject,
)
from memories.review.models import ReviewAssignment, ReviewPresence
from reasoningbank_site.api import status_for
from reasoningbank_site.errors import StaleVersion
from reasoningbank_site.text import ago
from tests import factories
from tests.factories import propose_item
from tests.helpers import wait_until_another_waits_on_my_lock

HTMX = {"HTTP_HX_REQUEST": "true"}


def _seen(html: str) -> int:
    return int(re.search(r'name="seen_version" value="(\d+)"', html).group(1))


def _url(name, bank, item=None):
    kwargs = {"bank_id": bank.public_id}
    if item is not None:
        kwargs["item_id"] = item.public_id
    return reverse(f"memories:{name}", kwargs=kwargs)


# --- the version check in the services ------------------------------------------------------


def test_a_decision_on_a_changed_item_is_refused_naming_the_other_decision(bank, item, alice, bob):
    assert item_current_version(item) == 1
    memory_item_reject(item=item, author=alice, reason="too vague", seen_version=1)

    stale = MemoryItem.objects.get(pk=item.pk)
    with pytest.raises(StaleVersion) as refused:
        memory_item_approve(item=stale, author=bob, seen_version=1)

    assert "Rejected by alice" in refused.value.message and "too vague" in refused.value.message
    assert "It is now rejected" in refused.value.message
    assert status_for(refused.value) == 409 and refused.value.code == "stale_version"
    assert refused.value.current_version == 2
    item.refresh_from_db()
    assert item.status == ItemStatus.REJECTED
    assert list(item.versions.values_list("action", flat=True)) == ["created", "rejected"]


def test_the_conflict_says_when_in_seconds_under_a_minute():
    now = timezone.now()
    assert ago(now - timedelta(seconds=2), now=now, seconds=True) == "just now"
    assert ago(now - timedelta(seconds=12), now=now, seconds=True) == "12 s ago"
    assert (
        ago(now - timedelta(minutes=3, seconds=5), now=now, seconds=True) == "3\xa0minutes ago"
    )  # timesince keeps its no-break space


def test_without_a_version_nothing_is_checked(bank, item, alice, bob):
    """Old forms and API clients that send no version decide as before."""
    memory_item_reject(item=item, author=alice, reason="no")
    memory_item_approve(item=MemoryItem.objects.get(pk=item.pk), author=bob)
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED


@pytest.mark.parametrize("decision", ["edit", "archive", "keep_both", "merge", "reject"])
def test_every_decision_checks_the_version(bank, trajectory, alice, bob, decision):
    item = propose_item(bank, trajectory, title="One lesson")
    other = propose_item(bank, trajectory, title="Another lesson", content="Retry a flaky call once, then report it.")
    if decision == "archive":
        memory_item_approve(item=item, author=alice)
    if decision == "keep_both":
        MemoryItem.objects.filter(pk=item.pk).update(near_duplicates=[{"id": str(other.public_id), "similarity": 0.9}])
    item.refresh_from_db()
    seen = item_current_version(item)
    memory_item_edit(item=item, author=alice, title="Changed by alice")  # the change bob did not see

    calls = {
        "edit": lambda v: memory_item_edit(item=item, author=bob, content="bob's", seen_version=v),
        "archive": lambda v: memory_item_archive(item=item, author=bob, seen_version=v),
        "keep_both": lambda v: memory_item_keep_both(item=item, author=bob, seen_version=v),
        "merge": lambda v: memory_item_merge(item=item, into=other, author=bob, seen_version=v),
        "reject": lambda v: memory_item_reject(item=item, author=bob, reason="x", seen_version=v),
    }
    with pytest.raises(StaleVersion, match="Edited by alice"):
        calls[decision](seen)
    assert not MemoryItemVersion.objects.filter(item=item, author=bob).exists()
    calls[decision](item_current_version(item))  # on the fresh version it goes through
    assert MemoryItemVersion.objects.filter(item__in=[item, other]).exclude(author=alice).exclude(author=None).exists()


@pytest.mark.django_db(transaction=True)
def test_two_simultaneous_decisions_on_one_version_exactly_one_wins(bank, item, alice, bob):
    """Both check and write at the same moment: the row lock makes the second
    wait for the first, read its version, and lose."""
    barrier = threading.Barrier(2)
    outcomes: dict[str, str] = {}

    def decide(name, call):
        try:
            barrier.wait()
            call()
            outcomes[name] = "won"
        except StaleVersion:
            outcomes[name] = "stale"
        finally:
            connection.close()

    fresh = MemoryItem.objects.get(pk=item.pk)
    threads = [
        threading.Thread(
            target=decide,
            args=("alice", lambda: memory_item_reject(item=item, author=alice, reason="no", seen_version=1)),
        ),
        threading.Thread(
            target=decide, args=("bob", lambda: memory_item_approve(item=fresh, author=bob, seen_version=1))
        ),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(outcomes.values()) == ["stale", "won"]
    winner = next(name for name, o in outcomes.items() if o == "won")
    item.refresh_from_db()
    assert item.status == (ItemStatus.REJECTED if winner == "alice" else ItemStatus.APPROVED)
    assert item.versions.count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_lesson_found_again_while_a_reviewer_edits_the_item_gets_the_next_version_number(bank, item, alice):
    """The distiller's consolidation waits for the reviewer's row lock, then
    numbers its version after the one the reviewer committed meanwhile: the
    latest version is read after the lock, not in the locking statement,
    whose snapshot predates the reviewer's commit (a duplicate number)."""
    holding, failures = threading.Event(), []

    def edit():
        try:
            with transaction.atomic():
                locked = MemoryItem.objects.get(pk=item.pk)
                item_lock(locked)
                locked.title = "Edited by alice"
                locked.save(update_fields=["title"])
                item_version_record(item=locked, action="edited", author=alice)
                holding.set()
                wait_until_another_waits_on_my_lock()  # the distiller's statement waits for this lock
        except BaseException as exc:  # reported below, as the test's failure
            failures.append(exc)
        finally:
            holding.set()
            connection.close()

    thread = threading.Thread(target=edit)
    thread.start()
    assert holding.wait(30)
    proposal = MemoryItem(
        bank=bank, title="Prefer the official source", description="d", content="c", origin=item.origin
    )
    with transaction.atomic():
        (support,) = memory_items_support_record(sightings=[Sighting(proposal, str(item.public_id), 0.97)])
    thread.join(30)
    assert not failures
    assert support is not None
    numbers = list(item.versions.order_by("number").values_list("number", "action"))
    assert numbers == [(1, numbers[0][1]), (2, "edited"), (3, "supported")]
    assert MemoryItem.objects.get(pk=item.pk).support_count == item.support_count + 1


# --- the pages: two reviewers, two sessions ------------------------------------------------------


def test_the_stale_reviewer_loses_and_sees_the_other_decision(bank, item, alice, bob):
    a, b = Client(), Client()
    a.force_login(alice)
    b.force_login(bob)
    focus = _url("review_focus", bank, item)
    seen_a, seen_b = _seen(a.get(focus).content.decode()), _seen(b.get(focus).content.decode())
    assert seen_a == seen_b == 1

    response = a.post(_url("item_reject", bank, item), {"reason": "says nothing new", "seen_version": seen_a})
    assert response.status_code == 302
    response = b.post(_url("item_approve", bank, item), {"seen_version": seen_b, "focus": "1"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert "Rejected by alice" in html and "says nothing new" in html
    assert "your decision was not applied" in html
    assert 'class="badge rejected"' in html
    assert _seen(html) == 2  # the panel now carries the fresh version: bob can decide again
    item.refresh_from_db()
    assert item.status == ItemStatus.REJECTED
    # deciding again, knowingly, on the fresh state works
    b.post(_url("item_approve", bank, item), {"seen_version": 2}, **HTMX)
    item.refresh_from_db()
    assert item.status == ItemStatus.APPROVED and item.approved_by == bob


def test_a_queue_row_decision_on_a_stale_row_shows_the_conflict(bank, item, alice, bob):
    b = Client()
    b.force_login(bob)
    html = b.get(_url("review", bank)).content.decode()
    seen = int(re.search(rf'name="seen-{item.public_id}" value="(\d+)"', html).group(1))
    memory_item_reject(item=item, author=alice, reason="duplicate of the coupon lesson")

    response = b.post(
        _url("review", bank),
        {"items": str(item.public_id), "row": "1", "action": "approve", f"seen-{item.public_id}": seen},
        **HTMX,
    )
    row = response.content.decode()
    assert "Rejected by alice" in row and "duplicate of the coupon lesson" in row
    assert 'class="badge rejected"' in row
    item.refresh_from_db()
    assert item.status == ItemStatus.REJECTED


def test_bulk_approve_reports_conflicts_per_item_and_applies_the_rest(client, bank, trajectory, alice, bob):
    lessons = (  # three different lessons: near-identical ones would ask to confirm the duplicate
        "Check the opening hours on the official site before planning a visit.",
        "Retry a flaky payment API call with exponential backoff and an idempotency key.",
        "Escape user input before building a shell command line.",
    )
    items = [propose_item(bank, trajectory, title=f"Lesson {n}", content=text) for n, text in enumerate(lessons)]
    client.force_login(bob)
    html = client.get(_url("review", bank)).content.decode()
    seen = {i.public_id: re.search(rf'name="seen-{i.public_id}" value="(\d+)"', html).group(1) for i in items}
    memory_item_edit(item=items[1], author=alice, content="Alice rewrote this one.")

    data = {"action": "approve", "items": [str(i.public_id) for i in items]}
    data.update({f"seen-{k}": v for k, v in seen.items()})
    response = client.post(_url("review", bank), data, follow=True)

    text = response.content.decode()
    assert "2 items approved." in text
    assert "“Lesson 1”: This item changed while you were looking at it. Edited by alice" in text
    statuses = {i.title: MemoryItem.objects.get(pk=i.pk).status for i in items}
    assert statuses == {"Lesson 0": "approved", "Lesson 1": "proposed", "Lesson 2": "approved"}


# --- presence ------------------------------------------------------------------------------------


def test_others_see_who_has_an_item_open_in_the_focus_view(bank, item, alice, bob, viewer):
    a, b, v = Client(), Client(), Client()
    a.force_login(alice)
    b.force_login(bob)
    v.force_login(viewer)
    presence = _url("review_presence", bank, item)
    focus_html = b.get(_url("review_focus", bank, item)).content.decode()
    assert 'hx-trigger="load, every 15s"' in focus_html and presence in focus_html

    assert "being reviewed" not in b.post(presence, **HTMX).content.decode()  # bob's own beat: not shown to bob
    assert "being reviewed by bob" in a.get(_url("review", bank)).content.decode()
    assert "being reviewed by bob" not in b.get(_url("review", bank)).content.decode()
    assert "being reviewed by bob" in a.post(presence, **HTMX).content.decode()
    assert "being reviewed by alice, bob" in v.post(presence, **HTMX).content.decode()
    assert not ReviewPresence.objects.filter(user=viewer).exists()  # a viewer only looks

    ReviewPresence.objects.filter(user=bob).update(last_seen=timezone.now() - timedelta(seconds=50))
    assert "being reviewed by bob" not in a.get(_url("review", bank)).content.decode()  # expired after 45 s


def test_presence_is_an_action_of_the_bank_only(client, bank, item, stranger):
    presence = _url("review_presence", bank, item)
    client.force_login(stranger)
    assert client.post(presence).status_code == 404
    assert not ReviewPresence.objects.exists()


# --- assignments ---------------------------------------------------------------------------------


def test_assigning_a_slice_filters_the_queue_and_names_the_assignee(client, owner, bank, trajectory, alice, bob):
    failure = propose_item(bank, trajectory, title="From a failure", origin="failure")
    success = propose_item(bank, trajectory, title="From a success", origin="success")
    listed = propose_item(bank, trajectory, title="Listed by hand", origin="success")
    client.force_login(owner)
    url = _url("review_assignments", bank)
    reviewers = client.get(url).content.decode()
    assert "alice" in reviewers and "bob" in reviewers

    response = client.post(
        url,
        {
            "reviewer": alice.pk,
            "origin": "failure",
            "items": f"see {_url('item_detail', bank, listed)}",
            "note": "failures this week",
        },
    )
    assert response.status_code == 302
    assignment = ReviewAssignment.objects.get()
    assert assignment.describe() == "origin failure" and list(assignment.items.all()) == [listed]
    event = AuditEvent.objects.get(action="review_assignment.create")
    assert event.actor_user == owner and event.after["reviewer"] == "alice"
    page = client.get(url).content.decode()
    assert "origin failure + 1 listed item" in page and "failures this week" in page

    a = Client()
    a.force_login(alice)
    mine = a.get(_url("review", bank), {"assigned": "me"}).content.decode()
    # the success's row is filtered out (its title may still show, as the twin another row names)
    assert "From a failure" in mine and "Listed by hand" in mine and f'id="item-{success.public_id}"' not in mine
    everything = a.get(_url("review", bank)).content.decode()
    row = everything.split(f'id="item-{failure.public_id}"')[1].split("</tr>")[0]
    assert "→ alice" in row
    other_row = everything.split(f'id="item-{success.public_id}"')[1].split("</tr>")[0]
    assert "→ alice" not in other_row
    b = Client()
    b.force_login(bob)
    assert "No proposed item matches" in b.get(_url("review", bank), {"assigned": "me"}).content.decode()
    searched = b.get(_url("review", bank), {"assigned": "me", "q": "source"})  # an empty queue to search in
    assert searched.status_code == 200 and "No proposed item matches" in searched.content.decode()

    remove = reverse(
        "memories:review_assignment_remove", kwargs={"bank_id": bank.public_id, "assignment_id": assignment.public_id}
    )
    assert client.post(remove).status_code == 302
    assert not ReviewAssignment.objects.exists()
    assert AuditEvent.objects.filter(action="review_assignment.delete", before__reviewer="alice").exists()


def test_an_assignment_goes_to_a_reviewer_of_the_team_and_only_reviewers_assign(client, bank, item, viewer, alice):
    url = _url("review_assignments", bank)
    client.force_login(viewer)
    assert client.get(url).status_code == 200  # viewers read who reviews what
    assert client.post(url, {"reviewer": alice.pk}).status_code == 403
    client.force_login(alice)
    response = client.post(url, {"reviewer": viewer.pk})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    response = client.post(url, {"reviewer": alice.pk, "items": "00000000-0000-4000-8000-000000000000"})
    assert "1 listed item is not in this bank." in response.content.decode()
    assert not ReviewAssignment.objects.exists()
    assert client.post(url, {"reviewer": alice.pk}).status_code == 302  # no criterion: the whole queue
    review_assignment_create(bank=bank, reviewer=alice, author=alice, items=[item])  # those items alone
    slices = re.findall(r"<td data-slice>(.*?)</td>", client.get(url).content.decode())
    assert slices == ["the whole queue", "1 listed item"]
    assert item.title in client.get(_url("review", bank), {"assigned": "me"}).content.decode()


def test_another_teams_member_cannot_see_or_remove_assignments(client, bank, alice, stranger, owner):
    assignment = review_assignment_create(bank=bank, reviewer=alice, author=owner, tag="checkout")
    client.force_login(stranger)
    assert client.get(_url("review_assignments", bank)).status_code == 404
    remove = reverse(
        "memories:review_assignment_remove", kwargs={"bank_id": bank.public_id, "assignment_id": assignment.public_id}
    )
    assert client.post(remove).status_code == 404
    assert ReviewAssignment.objects.filter(pk=assignment.pk).exists()


def test_the_queue_with_slices_and_presence_stays_within_a_few_queries(
    client, bank, owner, alice, bob, django_assert_max_num_queries
):
    items = factories.bulk_items(bank, 50)
    for tag in ("checkout", "auth", "search"):
        review_assignment_create(bank=bank, reviewer=alice, author=owner, tag=tag, items=items[:3])
    for item in items[:10]:
        review_presence_touch(item=item, user=bob)
    client.force_login(alice)
    url = _url("review", bank)
    # 14: session, user, bank with membership, slices (+ their items), the page (its rows' versions and
    # presence read with them), a query per slice for the rows' assignees, the agent dropdown, the bank's
    # guidelines, the reviewer's saved views and the bank's trust policy (the rows' corroboration)
    with django_assert_max_num_queries(14):
        html = client.get(url).content.decode()
    assert html.count("being reviewed by bob") == 10 and html.count("→ alice") == 3
    with django_assert_max_num_queries(14):
        mine = client.get(url, {"assigned": "me"}).content.decode()
    assert mine.count('<tr id="item-') == 3
