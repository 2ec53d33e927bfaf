"""Duplicates: a lesson distilled again becomes supporting evidence
on the item that holds it; approving next to an approved near-duplicate asks
for confirmation; merging keeps the merged item's text; the comparison page;
retrieval serves one item per lesson. Real embeddings (MiniLM) throughout."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.teams.banks import bank_update_settings
from memories.embedding.items import memory_item_embed_refresh
from memories.items.experiences import experience_create
from memories.items.models import ItemStatus, MemoryItem, SupportKind
from memories.items.services import memory_item_create, memory_item_edit
from memories.review.decisions import memory_item_approve, memory_item_merge
from memories.serving.preview import retrieval_preview
from reasoningbank_site.api import status_for
from reasoningbank_site.errors import DuplicateApproval, Invalid
from tests import factories
from tests.factories import make_done_trajectory, propose_item

HTMX = {"HTTP_HX_REQUEST": "true"}
# Near-identical wordings of one lesson (cosine ≥ 0.92 with MiniLM), and a different lesson.
SAME = "Prefer the official source"
AGAIN = "Prefer official sources"
OTHER = dict(
    title="Type dates into date picker inputs",
    description="Use when a form asks for a date with a calendar widget.",
    content="Typing the date as YYYY-MM-DD is more reliable than clicking through calendar months.",
)


def _settings(bank, **values):
    bank_update_settings(bank=bank, actor=None, **values)
    bank.refresh_from_db()


def _actions(item):
    return [(v.action, v.author) for v in item.versions.order_by("number")]


def test_a_lesson_distilled_again_is_support_on_the_item_not_a_new_proposal(bank, trajectory):
    first = propose_item(bank, trajectory, title=SAME)
    later = make_done_trajectory(bank)
    again = propose_item(bank, later, title=AGAIN, content="Check the institution's own pages before answering!")

    assert again.pk == first.pk  # the proposal became evidence on the item the bank already has
    assert list(MemoryItem.objects.filter(bank=bank).values_list("title", flat=True)) == [SAME]
    first.refresh_from_db()
    assert first.support_count == 1
    (support,) = first.supports.all()
    assert support.kind == SupportKind.DISTILLED and support.similarity >= bank.duplicate_threshold
    assert support.trajectory_ids == [str(later.public_id)]
    assert (support.title, support.content) == (AGAIN, "Check the institution's own pages before answering!")
    assert _actions(first)[-1] == ("supported", None)
    assert str(later.public_id)[:8] in first.versions.order_by("number").last().note

    different = propose_item(bank, later, **OTHER)
    assert different.pk != first.pk and different.status == ItemStatus.PROPOSED
    assert MemoryItem.objects.filter(bank=bank).count() == 2


def test_the_trajectory_shows_what_it_taught_again_in_the_api_and_on_its_page(client, reviewer, bank, trajectory):
    first = propose_item(bank, trajectory, title=SAME)
    later = make_done_trajectory(bank)
    propose_item(bank, later, title=AGAIN, content="Check the institution's own pages before answering!")
    token = factories.make_token(bank, scopes=("ingest", "review"))  # review: reaches runs no token of its sent

    body = client.get(f"/api/v1/trajectories/{later.public_id}", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert body["items"] == []
    assert [(i["id"], i["title"]) for i in body["supported_items"]] == [(str(first.public_id), SAME)]
    client.force_login(reviewer)
    page = client.get(
        reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": later.public_id})
    )
    assert "Seen again" in page.content.decode() and SAME in page.content.decode()


def test_the_duplicate_threshold_is_per_bank(bank, other_bank, trajectory):
    _settings(bank, duplicate_threshold=1.0)  # only identical text is consolidated
    first = propose_item(bank, trajectory, title=SAME)
    second = propose_item(bank, trajectory, title=AGAIN)
    assert second.pk != first.pk and [d["id"] for d in second.near_duplicates] == [str(first.public_id)]
    assert 0.92 <= second.near_duplicates[0]["similarity"] < 1.0  # a suggestion for reviewers instead

    theirs = propose_item(other_bank, title=SAME)
    assert propose_item(other_bank, title=AGAIN).pk == theirs.pk  # the default threshold consolidates

    with pytest.raises(Invalid, match=r"0\.85 and 1"):
        bank_update_settings(bank=bank, actor=None, duplicate_threshold=0.5)
    bank.refresh_from_db()
    assert bank.duplicate_threshold == 1.0


def test_approving_next_to_an_approved_near_duplicate_needs_confirmation(bank, owner, trajectory):
    _settings(bank, duplicate_threshold=0.99)
    served = propose_item(bank, trajectory, title=SAME)
    memory_item_approve(item=served, author=owner)
    twin = propose_item(bank, trajectory, title=AGAIN)
    assert twin.pk != served.pk

    _settings(bank, duplicate_threshold=0.9)
    twin = MemoryItem.objects.get(pk=twin.pk)
    with pytest.raises(DuplicateApproval, match=SAME) as refused:
        memory_item_approve(item=twin, author=owner)
    assert status_for(refused.value) == 409 and refused.value.code == "duplicate_needs_confirmation"
    assert [d.item.pk for d in refused.value.duplicates] == [served.pk]
    twin.refresh_from_db()
    assert twin.status == ItemStatus.PROPOSED and _actions(twin) == [("created", None)]

    memory_item_approve(item=twin, author=owner, confirm_duplicate=True)
    twin.refresh_from_db()
    assert twin.status == ItemStatus.APPROVED and twin.approved_by == owner


def test_the_check_uses_the_proposal_time_suggestions_when_the_text_is_not_embedded(bank, owner, trajectory):
    _settings(bank, duplicate_threshold=0.99)
    served = propose_item(bank, trajectory, title=SAME)
    twin = propose_item(bank, trajectory, title=AGAIN)
    memory_item_approve(item=served, author=owner)
    memory_item_edit(item=twin, author=owner, content="Check the institution's own pages first.")  # not embedded
    _settings(bank, duplicate_threshold=0.9)
    with pytest.raises(DuplicateApproval):
        memory_item_approve(item=MemoryItem.objects.get(pk=twin.pk), author=owner)


def test_merge_keeps_the_merged_items_edited_text_on_the_target(bank, owner, trajectory):
    _settings(bank, duplicate_threshold=1.0)
    target = propose_item(bank, trajectory, title=SAME)
    merged = propose_item(bank, trajectory, title=AGAIN)
    memory_item_edit(item=merged, author=owner, content="Quote the institution's own page, with its date.")
    memory_item_merge(item=merged, into=target, author=owner)

    merged.refresh_from_db()
    target.refresh_from_db()
    assert merged.status == ItemStatus.SUPERSEDED
    assert _actions(merged)[-1] == ("merged", owner)  # the reviewer's act, not "superseded by the pipeline"
    assert target.status == ItemStatus.APPROVED and target.support_count == 1
    (support,) = target.supports.all()
    assert (support.kind, support.merged_item, support.author) == (SupportKind.MERGED, merged, owner)
    assert support.content == "Quote the institution's own page, with its date."
    assert _actions(target)[-1] == ("merged-in", owner)


# --- pages ---------------------------------------------------------------------------------------


def _url(name, bank, item, **kw):
    return reverse(f"memories:{name}", kwargs={"bank_id": bank.public_id, "item_id": item.public_id, **kw})


def test_compare_page_diffs_the_words_and_escapes_the_text(client, reviewer, stranger, bank, owner):
    left = memory_item_create(
        bank=bank,
        title="Check totals",
        description="Before paying.",
        content="Add <script>alert(1)</script> prices up",
        author=owner,
    )
    right = memory_item_create(
        bank=bank, title="Check totals", description="Before paying.", content="Add the prices up twice", author=owner
    )
    url = _url("item_compare", bank, left, other_id=right.public_id)
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(stranger)
    assert client.get(url).status_code == 404
    client.force_login(reviewer)
    html = client.get(url).content.decode()
    assert "<script>alert" not in html and "<del>&lt;script&gt;alert(1)&lt;/script&gt;</del>" in html
    assert "<ins>the</ins>" in html and "<ins>twice</ins>" in html
    assert html.count("Add the prices up twice") == 1  # the other side in full
    assert f'name="into" value="{right.public_id}"' in html  # merge either way from here


def test_near_duplicate_panel_shows_the_content_and_links_the_comparison(client, reviewer, bank, trajectory):
    _settings(bank, duplicate_threshold=1.0)
    first = propose_item(bank, trajectory, title=SAME, content="Open the library's own site, not a directory.")
    second = propose_item(bank, trajectory, title=AGAIN, content="Open the library's own site, not a directory!")
    client.force_login(reviewer)
    html = client.get(_url("review_focus", bank, second)).content.decode()
    assert "Open the library&#x27;s own site, not a directory." in html
    assert _url("item_compare", bank, second, other_id=first.public_id) in html


def test_queue_rows_preview_the_content_and_count_the_support(client, reviewer, bank, trajectory):
    content = "Check <b>the</b> institution's own pages. " * 10
    item = propose_item(bank, trajectory, title=SAME, content=content)
    assert propose_item(bank, make_done_trajectory(bank), title=AGAIN, content=content).pk == item.pk
    client.force_login(reviewer)
    html = client.get(reverse("memories:review", kwargs={"bank_id": bank.public_id})).content.decode()
    assert "seen again ×1" in html
    assert "Check &lt;b&gt;the&lt;/b&gt; institution&#x27;s own pages." in html and "<b>the</b>" not in html
    assert item.content[:190] not in html  # cut to ~200 characters
    focus = client.get(_url("review_focus", bank, item)).content.decode()
    (support,) = item.supports.all()
    assert "Seen again in 1 trajectory" in focus
    assert (
        reverse("trajectories:detail", kwargs={"bank_id": bank.public_id, "trajectory_id": support.trajectory_ids[0]})
        in focus
    )


def test_queue_approve_of_a_duplicate_asks_then_approves_when_confirmed(client, reviewer, owner, bank, trajectory):
    _settings(bank, duplicate_threshold=0.99)
    served = propose_item(bank, trajectory, title=SAME)
    memory_item_approve(item=served, author=owner)
    twin = propose_item(bank, trajectory, title=AGAIN)
    _settings(bank, duplicate_threshold=0.9)
    client.force_login(reviewer)
    review = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    row = {"items": [str(twin.public_id)], "action": "approve", "row": "1"}
    html = client.post(review, row, **HTMX).content.decode()
    assert "data-dup-confirm" in html and 'name="confirm_duplicate" value="1"' in html
    assert _url("item_compare", bank, twin, other_id=served.public_id) in html
    twin.refresh_from_db()
    assert twin.status == ItemStatus.PROPOSED
    client.post(review, {**row, "confirm_duplicate": "1"}, **HTMX)
    twin.refresh_from_db()
    assert twin.status == ItemStatus.APPROVED


def test_bulk_approve_names_the_duplicates_and_approves_the_rest(client, reviewer, owner, bank, trajectory):
    _settings(bank, duplicate_threshold=0.99)
    served = propose_item(bank, trajectory, title=SAME)
    memory_item_approve(item=served, author=owner)
    twin = propose_item(bank, trajectory, title=AGAIN)
    other = propose_item(bank, trajectory, **OTHER)
    _settings(bank, duplicate_threshold=0.9)
    client.force_login(reviewer)
    review = reverse("memories:review", kwargs={"bank_id": bank.public_id})
    response = client.post(
        review, {"items": [str(twin.public_id), str(other.public_id)], "action": "approve"}, follow=True
    )
    html = response.content.decode()
    assert "1 item approved." in html and f"near-duplicates of approved items: “{AGAIN}”" in html
    assert MemoryItem.objects.get(pk=other.pk).status == ItemStatus.APPROVED
    assert MemoryItem.objects.get(pk=twin.pk).status == ItemStatus.PROPOSED


def test_item_page_approve_asks_for_confirmation(client, reviewer, owner, bank, trajectory):
    _settings(bank, duplicate_threshold=0.99)
    memory_item_approve(item=propose_item(bank, trajectory, title=SAME), author=owner)
    twin = propose_item(bank, trajectory, title=AGAIN)
    _settings(bank, duplicate_threshold=0.9)
    client.force_login(reviewer)
    html = client.post(_url("item_approve", bank, twin), {"focus": "1"}, **HTMX).content.decode()
    assert "Approve a near-duplicate?" in html and 'name="focus" value="1"' in html
    assert MemoryItem.objects.get(pk=twin.pk).status == ItemStatus.PROPOSED
    client.post(_url("item_approve", bank, twin), {"confirm_duplicate": "1"})
    assert MemoryItem.objects.get(pk=twin.pk).status == ItemStatus.APPROVED


# --- retrieval -----------------------------------------------------------------------------------

LESSONS = [
    (
        "Sign in through the login form first",
        "Use when the task needs an account.",
        "Submit the username and password, then confirm you are signed in.",
    ),
    (
        "Walk every page of a paginated list",
        "Use when results are split across pages.",
        "Click next until it disappears.",
    ),
    ("Type dates into date picker inputs", "Use when a form asks for a date.", "Type YYYY-MM-DD instead of clicking."),
    ("Check the cart total before paying", "Use before a payment.", "Add up the item prices and compare."),
]


def test_retrieval_never_serves_two_duplicates_and_still_fills_k(bank, owner):
    _settings(bank, min_similarity=-1.0, duplicate_threshold=0.95)
    items = [memory_item_create(bank=bank, title=t, description=d, content=c, author=owner) for t, d, c in LESSONS]
    twin = memory_item_create(
        bank=bank, title=LESSONS[0][0] + ".", description=LESSONS[0][1], content=LESSONS[0][2], author=owner
    )
    for item in [*items, twin]:
        memory_item_approve(item=item, author=owner, confirm_duplicate=True)
        memory_item_embed_refresh(item_id=item.pk)  # what the worker does after the approval
    query = "Sign in through the login form before opening the account"

    served = [item.pk for item, _ in retrieval_preview(bank=bank, query=query, k=3).items]
    assert len(served) == 3 and len({items[0].pk, twin.pk} & set(served)) == 1
    assert served[0] in (items[0].pk, twin.pk)  # the better-scoring one of the pair stays

    _settings(bank, duplicate_threshold=1.0)
    served = [item.pk for item, _ in retrieval_preview(bank=bank, query=query, k=3).items]
    assert {items[0].pk, twin.pk} <= set(served)  # at 1.0 only identical text counts: both served


def test_viewers_read_the_compare_page_without_merge_buttons(client, bank, owner, viewer):
    a = memory_item_create(bank=bank, title="A", description="", content="x", author=owner)
    b = memory_item_create(bank=bank, title="B", description="", content="y", author=owner)
    client.force_login(viewer)
    html = client.get(_url("item_compare", bank, a, other_id=b.public_id)).content.decode()
    assert "Word diff" in html and 'name="into"' not in html  # viewers read, never merge


def test_the_threshold_is_a_bank_setting_with_its_range(client, owner, bank):
    client.force_login(owner)
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    html = client.get(url).content.decode()
    assert 'name="duplicate_threshold"' in html and 'min="0.85"' in html and 'value="0.92"' in html


def test_experiences_mode_serves_one_item_per_lesson_too(bank, owner):
    _settings(bank, retrieval_mode="experiences", min_similarity=-1.0, duplicate_threshold=0.95)
    experience = experience_create(bank=bank, task="Sign in to the shop and list my orders", task_id="t1")
    created = [
        memory_item_create(bank=bank, title=t, description=d, content=c, author=owner)
        for t, d, c in (LESSONS[0], (LESSONS[0][0] + ".", *LESSONS[0][1:]), LESSONS[1])
    ]
    for item in created:
        MemoryItem.objects.filter(pk=item.pk).update(experience=experience)
        memory_item_approve(item=item, author=owner, confirm_duplicate=True)
        memory_item_embed_refresh(item_id=item.pk)
    served = [item.pk for item, _ in retrieval_preview(bank=bank, query="Sign in and list my orders", k=1).items]
    assert served == [created[0].pk, created[2].pk]  # the experience's items, its second wording left out
