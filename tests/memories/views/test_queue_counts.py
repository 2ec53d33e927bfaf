"""The queue says what it shows: its heading's count follows the filters (also when htmx swaps the rows
alone), names the state it counts, and an empty view says which view is empty; a decided item's row no
longer names the reviewers it was dealt to."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memories.review.collaboration import review_assignment_create
from memories.review.decisions import memory_item_reject
from memories.review.policy import review_policy_update
from memories.review.policy_models import ReviewSeat
from tests.factories import bulk_items, make_done_trajectory, propose_item
from tests.memories.views import HTMX

QUEUE_TARGET = {**HTMX, "HTTP_HX_TARGET": "queue"}  # what the filter form's hx-get sends


def _queue(bank):
    return reverse("memories:review", kwargs={"bank_id": bank.public_id})


def _count(html: str) -> str:
    found = re.findall(r'<span id="queue-count"[^>]*>([^<]*)</span>', html)
    assert found, "no queue count in the answer"
    return found[-1]


def test_the_filters_rows_come_with_their_count(client, reviewer, bank):
    bulk_items(bank, 7)  # items 0, 3 and 6 have a near-duplicate suggestion
    client.force_login(reviewer)
    assert _count(client.get(_queue(bank)).content.decode()) == "7 proposed"
    html = client.get(_queue(bank), {"dup": "on"}, **QUEUE_TARGET).content.decode()
    assert html.lstrip().startswith('<section id="queue"')  # the rows alone, as before
    assert html.count('<tr id="item-') == 3
    assert 'hx-swap-oob="true"' in html and _count(html) == "3 proposed"
    # The "Filters" toggle says how many are on, and is open while any is.
    assert re.search(r'id="filters-on"[^>]*hx-swap-oob="true">\(1 on\)</span>', html)
    page = client.get(_queue(bank), {"dup": "on", "state": "stale", "q": "lesson"}).content.decode()
    assert re.search(r'id="filters-on"[^>]*>\(2 on\)</span>', page) and "data-filters-toggle open" in page
    assert "data-filters-toggle open" not in client.get(_queue(bank), {"q": "lesson"}).content.decode()


def test_assigned_to_me_counts_the_rows_it_keeps_after_a_decision(client, bank, owner):
    items = bulk_items(bank, 5)
    review_assignment_create(bank=bank, reviewer=owner, author=owner, items=items[:3])
    client.force_login(owner)
    html = client.get(_queue(bank), {"assigned": "me"}).content.decode()
    assert html.count('<tr id="item-') == 3 and _count(html) == "3 proposed"
    body = {"action": "approve", "items": [str(items[0].public_id)], "row": "1", "next": f"{_queue(bank)}?assigned=me"}
    answer = client.post(_queue(bank), body, **HTMX).content.decode()
    assert _count(answer) == "2 proposed"


@pytest.fixture
def refused_twice(bank, owner):
    """Two rejected items, each distilled again since (the "Refused, distilled again" state), and a proposed one."""
    for title, content in (("Call the shop", "Phone before you go."), ("Pay by card", "Cards are accepted.")):
        item = propose_item(bank, title=title, content=content)
        memory_item_reject(item=item, author=owner, reason="Not true here.")
        propose_item(bank, make_done_trajectory(bank), title=title, content=content)
    return propose_item(bank, title="Book a table by phone", content="Call the restaurant.")


def test_a_state_view_counts_that_state(client, reviewer, bank, refused_twice):
    client.force_login(reviewer)
    assert _count(client.get(_queue(bank)).content.decode()) == "1 proposed"
    html = client.get(_queue(bank), {"state": "repeated"}).content.decode()
    assert html.count('<tr id="item-') == 2
    assert _count(html) == "2 refused, distilled again"


@pytest.mark.parametrize(
    ("state", "says"),
    [
        ("stale", "No approved item is stale"),
        ("expired", "No approved item is past its validity"),
        ("retirement", "No approved item is proposed for retirement"),
        ("repeated", "No refused item was distilled again"),
    ],
)
def test_an_empty_state_view_says_which_view_is_empty(client, reviewer, bank, item, state, says):
    client.force_login(reviewer)
    html = client.get(_queue(bank), {"state": state}).content.decode()
    assert '<tr id="item-' not in html and says in html
    assert "No proposed item" not in html
    assert _count(html).startswith("0 ")
    narrowed = client.get(_queue(bank), {"state": state, "dup": "on"}).content.decode()
    assert "No proposed item" not in narrowed and "matches these filters" in narrowed


def test_an_empty_filtered_queue_still_says_proposed(client, reviewer, bank, item):
    client.force_login(reviewer)
    html = client.get(_queue(bank), {"dup": "on"}).content.decode()
    assert "No proposed item matches these filters." in html


def test_a_rejected_items_row_no_longer_names_the_reviewers_it_was_dealt_to(client, bank, owner, alice, bob):
    item = propose_item(bank, title="Call the shop", content="Phone before you go.")
    review_policy_update(bank=bank, actor=owner, guidelines="", decisions_required=2, distribution="round_robin")
    assert set(ReviewSeat.objects.filter(item=item).values_list("user__username", flat=True)) == {"alice", "bob"}
    client.force_login(owner)
    assert "→ alice, bob" in client.get(_queue(bank)).content.decode()
    body = {"action": "reject", "reason": "vague", "items": [str(item.public_id)], "row": "1", "next": _queue(bank)}
    row = client.post(_queue(bank), body, **HTMX).content.decode()
    assert 'data-status="rejected"' in row and "data-assignees" not in row
    # Distilled again after the rejection: listed under "Refused, distilled again", still without its old seats.
    propose_item(bank, make_done_trajectory(bank), title=item.title, content=item.content)
    html = client.get(_queue(bank), {"state": "repeated"}).content.decode()
    assert f'id="item-{item.public_id}"' in html and "data-assignees" not in html
