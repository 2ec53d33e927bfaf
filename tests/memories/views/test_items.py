"""Writing a memory by hand."""

from __future__ import annotations

from django.urls import reverse

from memories.items.models import ItemStatus, MemoryItem


def test_reviewer_writes_a_memory_by_hand_and_can_approve_it_at_once(client, reviewer, viewer, stranger, bank):
    url = reverse("memories:item_create", kwargs={"bank_id": bank.public_id})
    assert client.get(url).status_code == 302  # anonymous → login
    client.force_login(stranger)
    assert client.post(url, {"title": "x", "description": "d", "content": "c"}).status_code == 404
    client.force_login(viewer)
    assert client.get(url).status_code == 403
    assert client.post(url, {"title": "x", "description": "d", "content": "c"}).status_code == 403
    assert not MemoryItem.objects.filter(bank=bank).exists()

    client.force_login(reviewer)
    invalid = client.post(url, {"title": "", "description": "d", "content": "c"})
    assert invalid.status_code == 200 and "This field is required" in invalid.content.decode()
    response = client.post(
        url,
        {
            "title": "Check the cart total before paying",
            "description": "Use before confirming any payment.",
            "content": "Read the order summary and compare the total with the expected price before you pay.",
            "approve_now": "on",
        },
    )
    item = MemoryItem.objects.get(bank=bank)
    assert response.status_code == 302 and str(item.public_id) in response["Location"]
    assert (item.status, item.origin, item.created_by, item.approved_by) == (
        ItemStatus.APPROVED,
        "manual",
        reviewer,
        reviewer,
    )
    assert item.embedding is not None  # approved items are embedded inline, so it is served at once
    assert [v.action for v in item.versions.all()] == ["created"]


def test_a_hand_written_memory_takes_tags(client, reviewer, bank):
    client.force_login(reviewer)
    url = reverse("memories:item_create", kwargs={"bank_id": bank.public_id})
    data = {"title": "Read error banners", "description": "After a submit.", "content": "They name the bad field."}
    response = client.post(url, {**data, "tags": "Forms errors"})
    assert response.status_code == 302
    assert MemoryItem.objects.get(bank=bank, title="Read error banners").tags == ["errors", "forms"]
