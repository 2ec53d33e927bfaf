"""One near-duplicate detector everywhere: an item written by hand (or
imported, or edited) and embedded afterwards is checked by the same search
the proposal and the approval use, so a 0.99-similar twin shows on both
items' pages and in the queue's "Has near-duplicate" filter before anyone
tries to approve it. Real embeddings (MiniLM)."""

from __future__ import annotations

from django.urls import reverse

from memories.items.services import memory_item_create
from memories.review.selectors import review_queue
from tests.factories import make_done_trajectory, propose_item

CONTENT = "Check the institution's own pages before answering."


def test_a_hand_written_twin_is_flagged_on_both_pages_and_by_the_filter(client, owner, bank):
    first = propose_item(bank, make_done_trajectory(bank), title="Prefer the official source", content=CONTENT)
    twin = memory_item_create(  # the same lesson in other words, below the bank's merge threshold
        bank=bank,
        title="Prefer official sources",
        description="Use when a schedule question comes up.",
        content="Check the official website of the institution before you answer.",
    )
    twin.refresh_from_db()
    first.refresh_from_db()
    assert [d["id"] for d in twin.near_duplicates] == [str(first.public_id)]
    assert 0.85 <= twin.near_duplicates[0]["similarity"] < bank.duplicate_threshold
    assert [d["id"] for d in first.near_duplicates] == [str(twin.public_id)]
    flagged = set(review_queue(bank=bank, has_duplicate=True).values_list("pk", flat=True))
    assert flagged == {first.pk, twin.pk}
    client.force_login(owner)
    for item, other in ((first, twin), (twin, first)):
        url = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})
        html = client.get(url).content.decode()
        assert "Near-duplicates" in html and str(other.public_id) in html
