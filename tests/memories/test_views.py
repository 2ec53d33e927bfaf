"""The memories pages (review queue, focus, item pages, playground, writing an
item by hand, import/export) through Django's test client: access by role,
the writes behind every control, and bounded query counts on list pages."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories import services
from memories.models import ItemStatus, MemoryItem, RetrievalEvent
from memories.services import memory_item_create
from tests.factories import bulk_items, make_done_trajectory, propose_item
from trajectories.models import Judgment, Trajectory

HTMX = {"HTTP_HX_REQUEST": "true"}


def page_urls(bank, item, trajectory):
    b = bank.public_id
    return {
        "review": reverse("memories:review", kwargs={"bank_id": b}),
        "focus": reverse("memories:review_focus", kwargs={"bank_id": b, "item_id": item.public_id}),
        "items": reverse("memories:items", kwargs={"bank_id": b}),
        "item": reverse("memories:item_detail", kwargs={"bank_id": b, "item_id": item.public_id}),
        "playground": reverse("memories:playground", kwargs={"bank_id": b}),
    }


def item_action(bank, item, action: str) -> str:
    """The URL of one action of the item page (approve, reject, edit, archive, merge, keep_both)."""
    return reverse(f"memories:item_{action}", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})


PAGES = ["review", "focus", "items", "item", "playground"]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("who", ["owner", "reviewer", "viewer"])
def test_members_read_every_page(client, request, bank, item, trajectory, page, who):
    client.force_login(request.getfixturevalue(who))
    response = client.get(page_urls(bank, item, trajectory)[page])
    assert response.status_code == 200
    assert bank.name in response.content.decode()


@pytest.mark.parametrize("page", PAGES)
def test_another_teams_member_gets_404(client, stranger, bank, item, trajectory, page):
    client.force_login(stranger)
    assert client.get(page_urls(bank, item, trajectory)[page]).status_code == 404


@pytest.mark.parametrize("page", PAGES)
def test_anonymous_is_sent_to_login(client, bank, item, trajectory, page):
    url = page_urls(bank, item, trajectory)[page]
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("accounts:login"))


def test_item_of_another_bank_is_404_even_for_a_member(client, owner, bank, other_bank):
    theirs = propose_item(other_bank, title="Their secret lesson")
    client.force_login(owner)
    url = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": theirs.public_id})
    assert client.get(url).status_code == 404
    theirs_t = make_done_trajectory(other_bank)
    url = reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": theirs_t.public_id})
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("who,status", [("viewer", 403), ("stranger", 404)])
def test_writes_are_refused_below_reviewer(client, request, bank, item, trajectory, who, status):
    client.force_login(request.getfixturevalue(who))
    urls = page_urls(bank, item, trajectory)
    assert client.post(item_action(bank, item, "approve")).status_code == status
    assert client.post(urls["review"], {"action": "approve", "items": [str(item.public_id)]}).status_code == status
    trajectory_url = reverse(
        "trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": trajectory.public_id}
    )
    assert client.post(trajectory_url, {"label": "failure", "reason": "wrong"}).status_code == status
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED
    assert not Judgment.objects.filter(trajectory=trajectory).exists()


def test_reviewer_edits_then_approves_and_history_shows_the_diff(client, reviewer, bank, item, trajectory):
    client.force_login(reviewer)
    url = page_urls(bank, item, trajectory)["item"]
    response = client.post(
        item_action(bank, item, "edit"),
        {
            "title": "Prefer the primary source",
            "description": item.description,
            "content": item.content,
            "note": "clearer",
        },
    )
    assert response.status_code == 302
    response = client.post(item_action(bank, item, "approve"))
    item.refresh_from_db()
    assert (item.title, item.status, item.approved_by) == ("Prefer the primary source", "approved", reviewer)
    html = client.get(url).content.decode()
    assert "<del>official</del>" in html and "<ins>primary</ins>" in html
    assert "edited" in html and "approved" in html and reviewer.username in html and "clearer" in html


def test_invalid_edit_rerenders_with_errors_for_htmx(client, reviewer, bank, item, trajectory):
    client.force_login(reviewer)
    url = item_action(bank, item, "edit")
    response = client.post(url, {"title": "", "description": "d", "content": "c"}, **HTMX)
    assert response.status_code == 200  # htmx 2 swaps only 2xx
    html = response.content.decode()
    assert 'id="item-panel"' in html and "errorlist" in html and "<html" not in html
    item.refresh_from_db()
    assert item.title == "Prefer the official source"


def test_reject_needs_a_reason_and_keeps_it(client, reviewer, bank, item, trajectory):
    client.force_login(reviewer)
    url = item_action(bank, item, "reject")
    response = client.post(url, {"reason": ""}, **HTMX)
    assert response.status_code == 200 and "errorlist" in response.content.decode()
    item.refresh_from_db()
    assert item.status == ItemStatus.PROPOSED
    client.post(url, {"reason": "too specific to one site"})
    item.refresh_from_db()
    assert (item.status, item.status_reason) == ("rejected", "too specific to one site")


def test_archive_an_approved_item(client, owner, bank, item, trajectory):
    client.force_login(owner)
    client.post(item_action(bank, item, "approve"))
    client.post(item_action(bank, item, "archive"))
    item.refresh_from_db()
    assert item.status == ItemStatus.ARCHIVED


def test_impossible_transition_is_a_message_not_a_500(client, owner, bank, item, trajectory):
    client.force_login(owner)
    response = client.post(item_action(bank, item, "archive"), follow=True)
    assert response.status_code == 200
    assert "Only approved items can be archived" in response.content.decode()
    # An action that does not exist has no URL: a 404, not a 500 (and the page itself takes no POST).
    assert client.post(page_urls(bank, item, trajectory)["item"] + "bogus/").status_code == 404
    assert client.post(page_urls(bank, item, trajectory)["item"]).status_code == 405


def test_merge_into_a_near_duplicate_supersedes_this_one(client, reviewer, bank, trajectory):
    bank.duplicate_threshold = 1.0  # suggestions only: at the default these would be consolidated
    bank.save(update_fields=["duplicate_threshold"])
    first = propose_item(bank, trajectory, title="Prefer the official source")
    second = propose_item(bank, trajectory, title="Prefer official sources")
    assert any(d["id"] == str(first.public_id) for d in second.near_duplicates), (
        "the real embedder should see these as near-duplicates"
    )
    client.force_login(reviewer)
    focus = reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": second.public_id})
    html = client.get(focus).content.decode()
    assert "Near-duplicates" in html and "Merge into this" in html
    assert 'name="focus" value="1"' in html
    client.post(item_action(bank, second, "merge"), {"into": str(first.public_id), "focus": "1"})
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == ItemStatus.APPROVED
    assert second.status == ItemStatus.SUPERSEDED and str(first.public_id) in second.status_reason
    assert reviewer.username in second.status_reason


def test_merge_into_an_item_of_another_bank_is_refused(client, reviewer, bank, other_bank, item, trajectory):
    theirs = propose_item(other_bank, title="Theirs")
    client.force_login(reviewer)
    response = client.post(item_action(bank, item, "merge"), {"into": str(theirs.public_id)}, **HTMX)
    assert response.status_code == 200 and "not in this bank" in response.content.decode()
    item.refresh_from_db()
    theirs.refresh_from_db()
    assert item.status == theirs.status == ItemStatus.PROPOSED


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


def test_list_pages_have_bounded_queries(client, owner, bank, django_assert_max_num_queries):
    bulk_items(bank, 40)
    bulk_items(bank, 35, status=ItemStatus.APPROVED)
    Trajectory.objects.bulk_create(
        Trajectory(bank=bank, task=f"task {i}", agent=f"a{i % 4}", steps=[]) for i in range(45)
    )
    client.force_login(owner)
    b = bank.public_id
    # The dashboard's charts add 4 queries, whatever the data (tests/trajectories/test_dashboard_charts.py).
    budgets = {"memories:review": 12, "memories:items": 12, "trajectories:list": 12, "trajectories:dashboard": 16}
    for name, budget in budgets.items():
        url = reverse(name, kwargs={"bank_id": b})
        with django_assert_max_num_queries(budget):
            response = client.get(url)
        assert response.status_code == 200
    html = client.get(reverse("memories:review", kwargs={"bank_id": b})).content.decode()
    assert html.count('<tr id="item-') == 40


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


def test_keep_both_clears_the_suggestion_records_it_and_approves(client, reviewer, bank, trajectory):
    bank.duplicate_threshold = 1.0  # suggestions only: at the default these would be consolidated
    bank.save(update_fields=["duplicate_threshold"])
    first = propose_item(bank, trajectory, title="Prefer the official source")
    second = propose_item(bank, trajectory, title="Prefer official sources")
    assert second.near_duplicates, "the real embedder should see these as near-duplicates"
    review = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    client.force_login(reviewer)
    assert second.title in client.get(review, {"dup": "on"}).content.decode()

    focus = reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": second.public_id})
    keep = item_action(bank, second, "keep_both")
    assert f'action="{keep}"' in client.get(focus).content.decode()  # the focus view posts there, with focus=1
    client.post(keep, {"focus": "1"})
    second.refresh_from_db()
    first.refresh_from_db()
    assert (second.status, second.near_duplicates, first.status) == (ItemStatus.APPROVED, [], ItemStatus.PROPOSED)
    kept = second.versions.get(action="kept-both")
    assert kept.author == reviewer and first.title in kept.note
    item_page = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": second.public_id})
    assert "Near-duplicates" not in client.get(item_page).content.decode()
    # Nothing left to dismiss: a clear message, not a 500.
    response = client.post(keep, {"focus": "1"}, follow=True)
    assert "no near-duplicate suggestions" in response.content.decode()


def _download(response) -> list[dict]:
    import json

    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_export_then_import_into_another_bank_as_proposed_items(client, owner, reviewer, viewer, stranger, bank, team):
    import json

    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.factories import make_bank

    approved = memory_item_create(
        bank=bank,
        title="Check the cart total before paying",
        description="Before payment.",
        content="Compare the order total with the expected price.",
        author=owner,
        status="approved",
    )
    memory_item_create(bank=bank, title="An idea still under review", description="d", content="c", author=owner)
    export = reverse("memories:items_export", kwargs={"bank_id": bank.public_id})
    client.force_login(stranger)
    assert client.get(export).status_code == 404
    client.force_login(viewer)
    response = client.get(export, {"status": "approved"})
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    rows = _download(response)
    assert [(r["id"], r["title"], r["status"]) for r in rows] == [(str(approved.public_id), approved.title, "approved")]
    assert len(_download(client.get(export))) == 2

    target = make_bank(team=team, slug="target")
    url = reverse("memories:items_import", kwargs={"bank_id": target.public_id})
    upload = "".join(json.dumps(row) + "\n" for row in rows).encode()
    assert client.post(url, {"file": SimpleUploadedFile("m.jsonl", upload)}).status_code == 403  # viewer
    client.force_login(reviewer)
    response = client.post(url, {"file": SimpleUploadedFile("m.jsonl", upload)})
    assert response.status_code == 302 and "origin=import" in response["Location"]
    imported = MemoryItem.objects.get(bank=target)
    assert (imported.title, imported.status, imported.origin, imported.created_by) == (
        approved.title,
        "proposed",
        "import",
        reviewer,
    )
    # The same file again: everything is a duplicate, nothing new.
    client.post(url, {"file": SimpleUploadedFile("m.jsonl", upload)})
    assert MemoryItem.objects.filter(bank=target).count() == 1


@pytest.mark.parametrize(
    "payload,message",
    [
        (
            b'{"title": "t", "description": "d", "content": "c"}\n{"title": "t2", "description": "d"}\n',
            "record 2: missing or empty content",
        ),
        (b'{"title": "t"\n', "Line 1 is not valid JSON"),
        (b'[1, {"title": "", "description": "d", "content": "c"}]', "record 1: expected an object"),
        (b"\xff\xfe", "not UTF-8"),
        (b"", "empty"),
    ],
)
def test_a_bad_import_file_imports_nothing_and_says_why(client, reviewer, bank, payload, message):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(reviewer)
    url = reverse("memories:items_import", kwargs={"bank_id": bank.public_id})
    response = client.post(url, {"file": SimpleUploadedFile("m.jsonl", payload)})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not MemoryItem.objects.filter(bank=bank).exists()


# --- tags and playground filters (scoped retrieval) --------------------------------------------


def test_reviewer_tags_an_item_over_htmx_and_the_queue_shows_them(client, reviewer, viewer, bank, item, trajectory):
    client.force_login(reviewer)
    form = client.get(page_urls(bank, item, trajectory)["item"], {"edit": "1"}, **HTMX).content.decode()
    assert 'name="tags"' in form
    fields = {"title": item.title, "description": item.description, "content": item.content}
    response = client.post(item_action(bank, item, "edit"), {**fields, "tags": "Checkout, web  auth"}, **HTMX)
    assert response.status_code == 200
    panel = response.content.decode()
    assert 'id="item-panel"' in panel and "<html" not in panel
    for tag in ("auth", "checkout", "web"):
        assert f'<span class="badge tag">{tag}</span>' in panel
    item.refresh_from_db()
    assert item.tags == ["auth", "checkout", "web"] and item.status == ItemStatus.PROPOSED
    assert "tags:" in panel and "<ins>checkout</ins>" in panel  # the history names the tag change

    # The edit form shows the current tags; the queue rows show them to everyone.
    form = client.get(page_urls(bank, item, trajectory)["item"], {"edit": "1"}).content.decode()
    assert 'value="auth, checkout, web"' in form
    client.force_login(viewer)
    queue = client.get(page_urls(bank, item, trajectory)["review"]).content.decode()
    assert '<span class="badge tag">checkout</span>' in queue


def test_bad_tags_rerender_the_edit_form_with_the_rule(client, reviewer, bank, item, trajectory):
    client.force_login(reviewer)
    fields = {"title": item.title, "description": item.description, "content": item.content}
    response = client.post(item_action(bank, item, "edit"), {**fields, "tags": "ok, no/slash"}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "errorlist" in html and "Tag &#x27;no/slash&#x27; may only hold letters" in html
    too_many = client.post(item_action(bank, item, "edit"), {**fields, "tags": " ".join(f"t{i}" for i in range(13))})
    assert "At most 12 tags" in too_many.content.decode()
    item.refresh_from_db()
    assert item.tags == []


def test_a_hand_written_memory_takes_tags(client, reviewer, bank):
    client.force_login(reviewer)
    url = reverse("memories:item_create", kwargs={"bank_id": bank.public_id})
    data = {"title": "Read error banners", "description": "After a submit.", "content": "They name the bad field."}
    response = client.post(url, {**data, "tags": "Forms errors"})
    assert response.status_code == 302
    assert MemoryItem.objects.get(bank=bank, title="Read error banners").tags == ["errors", "forms"]


def test_playground_filters_by_tags_agent_and_metadata(client, viewer, owner, bank):
    bank.min_similarity = -1.0
    bank.save(update_fields=["min_similarity"])
    hours = propose_item(
        bank,
        title="Confirm opening hours on the official site",
        source_agents=["museum-bot"],
        source_metadata=[{"env": "prod", "city": "Lyon"}],
    )
    services.memory_item_edit(item=hours, author=owner, tags=["hours"])
    services.memory_item_approve(item=hours, author=owner)
    tickets = propose_item(bank, title="Buy tickets online before going", source_agents=["ticket-bot"])
    services.memory_item_approve(item=tickets, author=owner)
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
