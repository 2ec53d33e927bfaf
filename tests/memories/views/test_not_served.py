"""The Memories page, an item's page and the Releases page's draft say what production serves: an
approved item production does not hold is marked "not served", with the reason on its page."""

from __future__ import annotations

import re

from django.urls import reverse

from memories.items.models import MemoryItem
from memories.releases.models import PublishMode
from memories.releases.publishing import release_mode_set, release_publish
from memories.review.decisions import memory_item_approve
from tests.factories import propose_item


def _row(html: str, title: str) -> str:
    """The Memories page's table row of the item titled ``title``."""
    return next(row for row in re.findall(r"<tr data-row.*?</tr>", html, re.S) if title in row)


def test_an_approved_item_production_does_not_serve_says_so_on_every_page(client, owner, bank):
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    published = memory_item_approve(item=propose_item(bank, title="Published lesson"), author=owner)
    release_publish(bank=bank, actor=owner)
    waiting = memory_item_approve(
        item=propose_item(bank, title="Waiting lesson", content="Another lesson entirely."),
        author=owner,
        confirm_duplicate=True,
    )
    suspended = memory_item_approve(
        item=propose_item(bank, title="Suspended lesson", content="A third lesson."),
        author=owner,
        confirm_duplicate=True,
    )
    release_publish(bank=bank, actor=owner)  # release 2 holds all three
    waiting_later = memory_item_approve(
        item=propose_item(bank, title="Approved after release 2", content="A fourth lesson."),
        author=owner,
        confirm_duplicate=True,
    )
    MemoryItem.objects.filter(pk=suspended.pk).update(suspended=True)
    client.force_login(owner)
    b = bank.public_id

    html = client.get(reverse("memories:items", kwargs={"bank_id": b})).content.decode()
    assert "Agents are served production, " in html and "release 2</a>" in html
    assert "data-not-served" not in _row(html, "Published lesson")
    assert "data-not-served" not in _row(html, "Waiting lesson")
    assert "data-not-served" in _row(html, "Suspended lesson")
    assert "data-not-served" in _row(html, "Approved after release 2")

    def note(item) -> str:
        page = client.get(reverse("memories:item_detail", kwargs={"bank_id": b, "item_id": item.public_id}))
        found = re.search(r'<p class="notice warn" data-not-served>(.*?)</p>', page.content.decode())
        return found.group(1) if found else ""

    assert note(published) == "" and note(waiting) == ""
    assert note(waiting_later).startswith("Not served: production (release 2) does not hold it yet.")
    assert note(suspended).startswith("Not served: suspended")

    releases = client.get(reverse("trajectories:releases", kwargs={"bank_id": b})).content.decode()
    assert re.search(r"Production \(release 2\) serves 2 items now; what the draft adds", releases)


def test_the_memories_page_names_each_items_state_and_why_it_is_not_served(client, owner, bank):
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    published = memory_item_approve(item=propose_item(bank, title="Published lesson"), author=owner)
    release_publish(bank=bank, actor=owner)
    memory_item_approve(
        item=propose_item(bank, title="Waiting lesson", content="Another lesson entirely."),
        author=owner,
        confirm_duplicate=True,
    )
    MemoryItem.objects.filter(pk=published.pk).update(suspended=True, retirement_reason="Impact says it hurts.")
    client.force_login(owner)
    html = client.get(reverse("memories:items", kwargs={"bank_id": bank.public_id})).content.decode()
    suspended, waiting = _row(html, "Published lesson"), _row(html, "Waiting lesson")
    assert ">Suspended</span>" in suspended and ">Approved</span>" not in suspended
    assert 'title="Not served: suspended until a reviewer decides on its retirement."' in suspended
    assert ">Approved · not yet in production</span>" in waiting
    assert 'title="Not served: production (release 1) does not hold it yet.' in waiting
