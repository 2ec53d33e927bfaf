"""Proposing a distillation's items together (one model call, one
near-duplicate query, one insert) gives the items, vectors and near-duplicates
that proposing them one after the other gave."""

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.embeddings import embed_text, item_embedding_hash, item_embedding_text
from memories.models import MemoryItem
from memories.selectors import near_duplicates_search, near_duplicates_search_many
from memories.services import ProposedItem, memory_item_create, memory_items_propose
from reasoningbank_site.errors import Invalid
from tests import factories

SEEDS = [
    ("Sign in before looking for account data", "Use when the task needs a logged-in user.", "Log in first."),
    ("Type dates instead of clicking the calendar", "Use when a form has a date picker.", "Type an ISO date."),
    ("Walk every page of the results", "Use when results span several pages.", "Follow next to the end."),
    ("Check the cart total before paying", "Use before a payment.", "Add up the item prices."),
]
# A distillation's items: the first two near-duplicates of seeds, the third of the first.
PROPOSED = [
    ("Log in before reading account data", "Use when the task needs a logged-in user.", "Sign in first."),
    ("Type the date rather than clicking the calendar", "Use when a form has a date picker.", "Type an ISO date."),
    ("Sign in before reading account data", "Use when the task needs a logged-in user.", "Log in first, always."),
    ("Prefer the official timetable", "Use when a schedule is asked for.", "Quote the operator's own page."),
]


def _bank_with_seeds(owner):
    # Suggestions only: at the default duplicate threshold these near-duplicates would be consolidated
    # (tests/memories/test_duplicates.py covers that).
    bank = factories.make_bank(duplicate_threshold=1.0)
    for title, description, content in SEEDS:
        # Approved at creation: embedded inline (an approval only enqueues the embedding).
        memory_item_create(
            bank=bank, title=title, description=description, content=content, author=owner, status="approved"
        )
    return bank


def _proposals():
    return [
        ProposedItem(title=t, description=d, content=c, cited_steps=[{"step": n}])
        for n, (t, d, c) in enumerate(PROPOSED)
    ]


def _duplicates_by_title(item):
    return [(d["title"], d["similarity"]) for d in item.near_duplicates]


def test_together_equals_one_after_the_other(owner):
    one_by_one_bank, together_bank = _bank_with_seeds(owner), _bank_with_seeds(owner)
    common = dict(origin="success", source_task_id="t", model="m", prompt_version="v", verdict_label="success")
    one_by_one = [memory_items_propose(bank=one_by_one_bank, proposals=[p], **common)[0] for p in _proposals()]
    with CaptureQueriesContext(connection) as captured:
        together = memory_items_propose(bank=together_bank, proposals=_proposals(), **common)
    # savepoint pair; near-duplicates: savepoint pair, scan settings, the search; one insert; then per item
    # its version (previous version, insert, audit) — the embedding and the search no longer per item
    assert len(captured) <= 7 + 3 * len(PROPOSED), [q["sql"][:80] for q in captured.captured_queries]

    assert [i.title for i in together] == [i.title for i in one_by_one] == [t for t, _d, _c in PROPOSED]
    for a, b in zip(one_by_one, together, strict=True):
        b.refresh_from_db()
        assert b.status == "proposed" and b.embedding_hash == item_embedding_hash(b)
        assert np.allclose(a.embedding, b.embedding, atol=1e-5)
        assert [t for t, _s in _duplicates_by_title(a)] == [t for t, _s in _duplicates_by_title(b)]
        assert np.allclose(
            [s for _t, s in _duplicates_by_title(a)], [s for _t, s in _duplicates_by_title(b)], atol=2e-4
        )
        assert list(b.versions.values_list("number", "action")) == [(1, "created")]
        assert b.cited_steps == a.cited_steps
    titles = [[t for t, _s in _duplicates_by_title(i)] for i in together]
    assert titles[0][0] == SEEDS[0][0] and titles[1][0] == SEEDS[1][0]  # near-duplicates of seeds…
    assert PROPOSED[0][0] in titles[2]  # …and of an item proposed before it in the same set
    assert titles[3] == []


def test_search_many_equals_search_one_by_one(owner):
    bank = _bank_with_seeds(owner)
    factories.make_bank()  # another bank's items never count
    vectors = [embed_text(item_embedding_text(title=t, description=d, content=c)) for t, d, c in PROPOSED]
    with CaptureQueriesContext(connection) as captured:
        many = near_duplicates_search_many(bank=bank, vectors=vectors)
    assert len(captured) <= 4  # savepoint pair, scan settings, one search
    assert many == [near_duplicates_search(bank=bank, vector=v) for v in vectors]
    assert any(many) and near_duplicates_search_many(bank=bank, vectors=[]) == []


def test_a_bad_item_stores_none_of_the_set(bank):
    proposals = [*_proposals()[:2], ProposedItem(title="  ", description="d", content="c")]
    with pytest.raises(Invalid, match="title"):
        memory_items_propose(bank=bank, proposals=proposals, origin="success")
    assert not MemoryItem.objects.filter(bank=bank).exists()
