"""The review queue: bulk and row decisions, filters and search."""

from __future__ import annotations

from django.urls import reverse

from memories.items.models import MemoryItem
from tests.factories import bulk_items, make_done_trajectory, propose_item
from tests.memories.views import HTMX


def test_bulk_approve_and_reject(client, reviewer, bank):
    items = bulk_items(bank, 4)
    client.force_login(reviewer)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    response = client.post(url, {"action": "approve", "items": [str(i.public_id) for i in items[:3]]})
    assert response.status_code == 302
    assert MemoryItem.objects.filter(bank=bank, status="approved").count() == 3
    # Reject without a reason is refused; with one it works.
    client.post(url, {"action": "reject", "items": [str(items[3].public_id)]})
    assert MemoryItem.objects.get(pk=items[3].pk).status == "proposed"
    client.post(url, {"action": "reject", "items": [str(items[3].public_id)], "reason": "vague"})
    assert MemoryItem.objects.get(pk=items[3].pk).status == "rejected"


def test_bulk_with_garbage_ids_is_a_message_not_a_500(client, reviewer, bank):
    client.force_login(reviewer)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    response = client.post(url, {"action": "approve", "items": ["not-a-uuid", "'; drop table"]}, follow=True)
    assert response.status_code == 200 and "Select at least one item" in response.content.decode()
    response = client.post(url, {"action": "explode", "items": ["x"]}, follow=True)
    assert response.status_code == 200


def test_row_approve_over_htmx_answers_with_the_row(client, reviewer, bank, item):
    client.force_login(reviewer)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    response = client.post(url, {"action": "approve", "items": [str(item.public_id)], "row": "1"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.strip().startswith(f'<tr id="item-{item.public_id}"') and "Approved" in html


def test_review_queue_filters_and_search(client, owner, bank, trajectory):
    a = propose_item(bank, trajectory, title="Check the official calendar", origin="success")
    b = propose_item(
        bank,
        title="Retry after a 503",
        origin="failure",
        verdict_label="failure",
        content="Back off and retry when a service answers 503.",
    )
    make_done_trajectory(bank, agent="other-agent")
    client.force_login(owner)
    url = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    html = client.get(url, {"origin": "failure"}).content.decode()
    assert b.title in html and a.title not in html
    html = client.get(url, {"q": "calendar"}).content.decode()
    assert a.title in html and b.title not in html
    html = client.get(url, {"agent": "web-agent"}).content.decode()
    assert a.title in html and b.title not in html
    html = client.get(url, {"date_from": "not-a-date", "verdict": "success"}).content.decode()
    assert a.title in html and b.title not in html
    # htmx asks for the queue partial only
    html = client.get(url, {"q": "503"}, HTTP_HX_TARGET="queue", **HTMX).content.decode()
    assert html.lstrip().startswith('<section id="queue"') and b.title in html


def test_a_queue_row_escapes_what_it_shows(client, bank, owner):
    """A queue row escapes what it shows: title, description and the cut preview."""
    propose_item(bank, title='<script>alert(1)</script> & "q"', description="<i>d</i>", content="<b>" + "x" * 300)
    client.force_login(owner)
    html = client.get(reverse("memories:review", kwargs={"bank_id": bank.public_id})).content.decode()
    assert "<script>alert" not in html and "<i>d" not in html and "<b>x" not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;") == 3  # title, checkbox, reason
    assert '<div class="muted small clamp">&lt;i&gt;d&lt;/i&gt;</div>' in html
    assert "&lt;b&gt;" + "x" * 196 + "…</div>" in html  # the preview, cut at 200 characters
