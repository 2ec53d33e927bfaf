"""The item page's actions (edit, approve, reject, archive, merge, keep both)
through Django's test client: the writes behind every control."""

from __future__ import annotations

from django.urls import reverse

from memories.items.models import ItemStatus
from tests.factories import propose_item
from tests.memories.views import HTMX, item_action, page_urls


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


def test_saving_an_approved_item_unchanged_says_so_and_an_invalid_form_keeps_its_place(
    client, owner, bank, item, trajectory
):
    from memories.releases.publishing import release_mode_set
    from memories.review.decisions import memory_item_approve

    release_mode_set(bank=bank, mode="manual", actor=owner)
    memory_item_approve(item=item, author=owner)
    client.force_login(owner)
    same = {"title": item.title, "description": item.description, "content": item.content, "tags": ""}
    response = client.post(item_action(bank, item, "edit"), same, **HTMX)
    html = response.content.decode()
    assert "No change to save." in html and "release draft" not in html
    assert response["HX-Reswap"] == "outerHTML show:window:top"  # its message heads the item: shown
    response = client.post(item_action(bank, item, "edit"), {**same, "content": "A new lesson."}, **HTMX)
    assert "this edit is in the next release draft" in response.content.decode()
    invalid = client.post(item_action(bank, item, "edit"), {**same, "title": ""}, **HTMX)
    assert "errorlist" in invalid.content.decode() and not invalid.has_header("HX-Reswap")  # errors stay in view
