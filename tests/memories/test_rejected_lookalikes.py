"""Rejected look-alikes: the refused items (rejected, or archived as wrong)
of the bank that an item resembles, shown to its reviewers with who refused
them and why, down to a floor below the repeat threshold. Vectors are set
directly where a similarity must be exact; one case goes through the real
embedding model (MiniLM) and the real proposal path."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

from memories.embedding.model import embedding_model_name, item_embedding_hash
from memories.items.models import ItemStatus, MemoryItem
from memories.items.versions import item_version_record
from memories.learning.refusals import memory_item_archive_as_wrong
from memories.review.decisions import memory_item_approve, memory_item_reject
from memories.review.duplicates import LOOKALIKE_SIMILARITY, rejected_lookalikes
from tests.factories import make_done_trajectory, make_items, propose_item

DIM = 384


@pytest.fixture
def axes():
    """Orthonormal unit vectors: axes[0] is the item's direction, the others the ways look-alikes differ."""
    basis, _ = np.linalg.qr(np.random.default_rng(11).normal(size=(DIM, 12)))
    return basis.T.astype(np.float32)


def _at(axes, n: int, similarity: float) -> np.ndarray:
    """A unit vector whose cosine similarity with axes[0] is ``similarity``."""
    return similarity * axes[0] + np.sqrt(1.0 - similarity**2) * axes[n]


def _embed(item: MemoryItem, vector) -> MemoryItem:
    MemoryItem.objects.filter(pk=item.pk).update(
        embedding=np.asarray(vector, dtype=np.float32),
        embedding_hash=item_embedding_hash(item),
        embedding_model=embedding_model_name(),
    )
    item.refresh_from_db()
    return item


def _items(bank, *titles) -> list[MemoryItem]:
    items = make_items(bank, len(titles), status=ItemStatus.PROPOSED)
    for item, title in zip(items, titles, strict=True):
        MemoryItem.objects.filter(pk=item.pk).update(title=title)
        item.title = title
    return items


@pytest.fixture
def scene(bank, other_bank, owner, bob, axes):
    """A proposed item, and around it: a rejected item at 0.80 (by bob), an
    archived-as-wrong one at 0.90 (by owner), a rejected one far off (0.40),
    an approved twin (0.99), a proposed near-twin (0.95), and another bank's
    rejected exact twin."""
    focus, rejected, wrong, far, twin, sibling = _items(
        bank, "Focus", "Rejected close", "Archived wrong", "Rejected far", "Approved twin", "Proposed sibling"
    )
    memory_item_reject(item=rejected, author=bob, reason="Official pages are often out of date here.")
    memory_item_reject(item=far, author=bob, reason="unrelated")
    memory_item_approve(item=wrong, author=owner)
    memory_item_archive_as_wrong(item=wrong, author=owner, reason="It sent agents to a dead page.")
    memory_item_approve(item=twin, author=owner)
    (theirs,) = _items(other_bank, "Their rejected twin")
    memory_item_reject(item=theirs, author=other_bank.team.memberships.first().user, reason="theirs")
    vectors = {focus: axes[0], rejected: _at(axes, 1, 0.80), wrong: _at(axes, 2, 0.90), far: _at(axes, 3, 0.40)}
    vectors |= {twin: _at(axes, 4, 0.99), sibling: _at(axes, 5, 0.95), theirs: axes[0]}
    for item, vector in vectors.items():
        _embed(item, vector)
    focus.refresh_from_db()
    return focus


def test_refused_items_above_the_floor_are_listed_most_similar_first_with_who_and_why(scene):
    found = rejected_lookalikes(item=scene)

    assert [(f.title, f.archived_as_wrong) for f in found] == [("Archived wrong", True), ("Rejected close", False)]
    assert [f.similarity for f in found] == [pytest.approx(0.90, abs=1e-3), pytest.approx(0.80, abs=1e-3)]
    assert [(f.refused_by, f.reason) for f in found] == [
        ("owner", "It sent agents to a dead page."),
        ("bob", "Official pages are often out of date here."),
    ]
    rejected_close = MemoryItem.objects.get(title="Rejected close")
    assert found[1].public_id == rejected_close.public_id
    # Below the repeat and near-duplicate thresholds (0.85), yet listed.
    assert LOOKALIKE_SIMILARITY <= 0.80 < 0.85


def test_live_twins_the_far_and_other_banks_are_never_listed(scene, other_bank):
    titles = {f.title for f in rejected_lookalikes(item=scene)}

    assert titles.isdisjoint({"Rejected far", "Approved twin", "Proposed sibling", "Their rejected twin"})
    # The other bank's exact twin (similarity 1.0) is nearer than any of ours: isolation, not distance, keeps it out.
    theirs = MemoryItem.objects.get(bank=other_bank)
    assert [f.title for f in rejected_lookalikes(item=theirs)] == []


def test_a_refused_item_does_not_list_itself(scene, owner):
    memory_item_reject(item=scene, author=owner, reason="no")
    scene.refresh_from_db()

    assert [f.title for f in rejected_lookalikes(item=scene)] == ["Archived wrong", "Rejected close"]


def test_who_refused_is_the_refusal_not_a_later_repeat(scene):
    rejected_close = MemoryItem.objects.get(title="Rejected close")
    item_version_record(item=rejected_close, action="repeated", note="Refused lesson distilled again")

    found = {f.title: f for f in rejected_lookalikes(item=scene)}

    assert found["Rejected close"].refused_by == "bob"


def test_at_most_three_are_listed(scene, bank, bob, axes):
    more = _items(bank, "Rejected 0.86", "Rejected 0.88")
    for n, (item, similarity) in enumerate(zip(more, (0.86, 0.88), strict=True)):
        memory_item_reject(item=item, author=bob, reason="no")
        _embed(item, _at(axes, 6 + n, similarity))

    assert [f.title for f in rejected_lookalikes(item=scene)] == ["Archived wrong", "Rejected 0.88", "Rejected 0.86"]


def test_an_item_without_an_embedding_has_none(scene):
    MemoryItem.objects.filter(pk=scene.pk).update(embedding=None)
    scene.refresh_from_db()

    assert rejected_lookalikes(item=scene) == []


def test_a_refused_lesson_in_other_words_shows_on_the_new_proposal(bank, owner, bob):
    """Real embeddings, real proposals: a paraphrase under the repeat threshold is queued as new, and
    its reviewers see the refused original."""
    original = propose_item(bank, make_done_trajectory(bank), title="Prefer the official source")
    memory_item_reject(item=original, author=bob, reason="Official pages are often out of date here.")

    again = propose_item(
        bank,
        make_done_trajectory(bank),
        title="Official sources first",
        description="For questions about schedules.",
        content="Consult the institution's official pages before giving an answer.",
    )

    assert again.pk != original.pk and again.status == ItemStatus.PROPOSED  # not a repeat: below 0.85
    (found,) = rejected_lookalikes(item=again)
    assert found.public_id == original.public_id and LOOKALIKE_SIMILARITY <= found.similarity < 0.85
    assert (found.refused_by, found.reason) == ("bob", "Official pages are often out of date here.")


def _focus_url(bank, item) -> str:
    return reverse("memories:review_focus", kwargs={"bank_id": bank.public_id, "item_id": item.public_id})


def test_the_focus_view_shows_the_panel_with_title_similarity_and_reason(client, reviewer, bank, scene):
    client.force_login(reviewer)

    html = client.get(_focus_url(bank, scene)).content.decode()

    assert html.count("data-rejected-lookalikes") == 1 and html.count("data-lookalike>") == 2
    panel = html[html.index("data-rejected-lookalikes") :]
    rejected_close = MemoryItem.objects.get(title="Rejected close")
    link = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": rejected_close.public_id})
    assert f'href="{link}">Rejected close</a>' in panel
    assert "(0.80 similar)" in panel and "(0.90 similar)" in panel
    assert "rejected by bob: <span data-reason>Official pages are often out of date here.</span>" in panel
    assert "archived as wrong by owner: <span data-reason>It sent agents to a dead page.</span>" in panel
    assert "Rejected far" not in html and "Their rejected twin" not in html


def test_html_in_a_reason_stays_inert(client, reviewer, bank, scene):
    MemoryItem.objects.filter(title="Rejected close").update(status_reason='<script>alert("x")</script><b>bold</b>')
    client.force_login(reviewer)

    html = client.get(_focus_url(bank, scene)).content.decode()

    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in html
    assert '<script>alert("x")' not in html and "<b>bold</b>" not in html


def test_no_panel_without_lookalikes(client, reviewer, bank, item):
    client.force_login(reviewer)

    response = client.get(_focus_url(bank, item))

    assert response.status_code == 200 and "data-rejected-lookalikes" not in response.content.decode()
