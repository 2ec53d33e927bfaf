"""Counts that follow decisions: the queue heading's "N proposed" comes again
with each row's answer, and a trajectory's page says what became of its
items rather than the "proposed for review" written when they were proposed."""

from __future__ import annotations

import re

from django.urls import reverse

from memories.review.decisions import memory_item_approve
from tests.factories import bulk_items, propose_item
from tests.memories.views import HTMX


def test_a_row_decision_sends_the_new_queue_count(client, reviewer, bank):
    items = bulk_items(bank, 3)
    client.force_login(reviewer)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    assert re.search(r'id="queue-count"[^>]*>3 proposed', client.get(url).content.decode())
    response = client.post(url, {"action": "approve", "items": [str(items[0].public_id)], "row": "1"}, **HTMX)
    html = response.content.decode()
    assert re.search(r'<template><span id="queue-count"[^>]*hx-swap-oob="true">2 proposed</span></template>', html)


def test_a_filtered_queue_counts_what_its_filter_keeps(client, reviewer, bank, item):
    bulk_items(bank, 2)
    client.force_login(reviewer)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    body = {"action": "reject", "reason": "vague", "items": [str(item.public_id)], "row": "1", "queue": "dup=on"}
    html = client.post(url, body, **HTMX).content.decode()
    assert re.search(r'hx-swap-oob="true">1 proposed', html)  # bulk item 0 has a suggestion; 1 and the rejected one not


def test_the_trajectory_page_says_what_became_of_its_items(client, owner, bank, trajectory):
    item = propose_item(bank, trajectory)
    trajectory.status_detail = "1 memory item proposed for review."
    trajectory.save(update_fields=["status_detail"])
    memory_item_approve(item=item, author=owner)
    client.force_login(owner)
    url = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id})
    html = client.get(url).content.decode()
    assert "proposed for review" not in html
    assert "1 item distilled from it: 1 approved." in html


def test_the_focus_view_says_where_the_item_stands_in_the_queue(client, reviewer, bank):
    items = bulk_items(bank, 5)
    client.force_login(reviewer)
    url = reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": items[2].public_id})
    assert "data-progress>3 of 5<" in client.get(url).content.decode()
    # In the queue narrowed to items with a near-duplicate (bulk items 0 and 3): the second of two.
    url = reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": items[3].public_id})
    assert "data-progress>2 of 2<" in client.get(url, {"dup": "on"}).content.decode()
    memory_item_approve(item=items[2], author=reviewer)
    url = reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": items[2].public_id})
    assert "data-progress>not in the queue · 4 to review<" in client.get(url).content.decode()


def test_evidence_lists_name_source_trajectories_by_their_task(client, owner, bank):
    from tests.factories import make_done_trajectory

    source = make_done_trajectory(bank, task="Find the museum's Sunday hours")
    item = propose_item(bank, source)
    again = make_done_trajectory(bank, task="Find the library's holiday hours")
    assert propose_item(bank, again).pk == item.pk  # the same lesson again: supporting evidence on it
    client.force_login(owner)
    html = client.get(
        reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
    ).content.decode()
    assert "Find the museum&#x27;s Sunday hours</a>" in html  # Distilled from
    assert "data-source-task>Find the library&#x27;s holiday hours</a>" in html  # Seen again
    assert f"trajectory {str(again.public_id)[:8]}…" not in html
