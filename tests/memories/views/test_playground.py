"""The retrieval playground: what a query would retrieve, without logging a retrieval."""

from __future__ import annotations

from django.urls import reverse

from memories.items.services import memory_item_create, memory_item_edit
from memories.review.decisions import memory_item_approve
from memories.serving.models import RetrievalEvent
from tests.factories import propose_item
from tests.memories.views import HTMX


def test_playground_shows_approved_items_without_logging_a_retrieval(client, viewer, owner, bank):
    # Even a bank that holds every agent retrieval out shows what the treatment arm would get.
    bank.holdout_fraction = 1.0
    bank.save(update_fields=["holdout_fraction"])
    approved = memory_item_create(
        bank=bank,
        title="Confirm opening hours on the official site",
        description="Use for questions about when a place is open.",
        content="Look for the opening hours on the venue's own website.",
        author=owner,
        status="approved",
    )
    memory_item_create(
        bank=bank, title="Unreviewed idea about opening hours", description="d", content="c", author=owner
    )
    client.force_login(viewer)
    url = reverse("memories:playground", kwargs={"bank_id": bank.public_id})
    html = client.get(url, {"q": "When is the museum open on Sunday?"}).content.decode()
    assert approved.title in html and "Unreviewed idea" not in html
    assert "System block" in html
    assert RetrievalEvent.objects.count() == 0
    approved.refresh_from_db()
    assert approved.served_count == 0
    assert client.get(url, {"q": "   "}).status_code == 200


def test_playground_filters_by_tags_agent_and_metadata(client, viewer, owner, bank):
    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    hours = propose_item(
        bank,
        title="Confirm opening hours on the official site",
        source_agents=["museum-bot"],
        source_metadata=[{"env": "prod", "city": "Lyon"}],
    )
    memory_item_edit(item=hours, author=owner, tags=["hours"])
    memory_item_approve(item=hours, author=owner)
    tickets = propose_item(bank, title="Buy tickets online before going", source_agents=["ticket-bot"])
    memory_item_approve(item=tickets, author=owner)
    client.force_login(viewer)
    url = reverse("memories:playground", kwargs={"bank_id": bank.public_id})
    query = {"q": "When is the museum open on Sunday?"}

    def shown(**filters):
        html = client.get(url, {**query, **filters}, **HTMX).content.decode()
        assert 'id="results"' in html
        return [title for title in (hours.title, tickets.title) if title in html]

    assert shown() == [hours.title, tickets.title]
    assert shown(tags="Hours") == [hours.title]
    assert shown(tags="hours tickets", tags_mode="all") == []
    assert shown(agent="ticket-bot, nobody") == [tickets.title]
    assert shown(metadata="city=Lyon\nenv=prod") == [hours.title]
    assert shown(metadata="env=dev") == []
    assert "matching the filters" in client.get(url, {**query, "metadata": "env=dev"}).content.decode()
    bad = client.get(url, {**query, "tags": "no/slash", "metadata": "no equals sign"}).content.decode()
    assert "may only hold letters" in bad and "Line 1: write key=value." in bad
    assert RetrievalEvent.objects.count() == 0
    # Hostile values are read as text, never a 500.
    assert client.get(url, {**query, "metadata": 'env="\\u0000"\nx=NaN\ny=' + "[" * 3000}).status_code == 200


def test_playground_serves_what_production_serves_not_items_waiting_for_a_release(client, viewer, owner, bank):
    from memories.releases.models import PublishMode
    from memories.releases.publishing import release_mode_set, release_publish

    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    release_mode_set(bank=bank, mode=PublishMode.MANUAL, actor=owner)
    published = memory_item_create(
        bank=bank,
        title="Confirm opening hours on the official site",
        description="Use for questions about when a place is open.",
        content="Look for the opening hours on the venue's own website.",
        author=owner,
        status="approved",
    )
    release_publish(bank=bank, actor=owner)
    memory_item_create(
        bank=bank,
        title="Call the museum when the site is unclear",
        description="Use when opening hours online disagree.",
        content="Phone the front desk to confirm.",
        author=owner,
        status="approved",
    )  # approved, not published: production (release 1) does not serve it
    client.force_login(viewer)
    url = reverse("memories:playground", kwargs={"bank_id": bank.public_id})
    html = client.get(url, {"q": "When is the museum open on Sunday?"}).content.decode()
    assert published.title in html and "Call the museum" not in html
    assert "1 item served by production (release 1)" in html
