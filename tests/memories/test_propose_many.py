"""Proposing a distillation's items together (one model call, one
near-duplicate query, one insert) gives the items, vectors and near-duplicates
that proposing them one after the other gave."""

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pgvector import Vector

from accounts.models import AuditEvent
from memories.embedding.model import embed_text, item_embedding_hash, item_embedding_text
from memories.items.models import MemoryItem
from memories.items.near_duplicates import near_duplicates_search, near_duplicates_search_many, vector_literal
from memories.items.services import ProposedItem, memory_item_create, memory_items_propose
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


def _bank_with_seeds(owner, duplicate_threshold=1.0):
    # 1.0: suggestions only; at the default duplicate threshold the first three proposals are consolidated
    # (test_lessons_found_again_are_consolidated_together below, tests/memories/test_duplicates.py).
    bank = factories.make_bank(duplicate_threshold=duplicate_threshold)
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
    # the bank's learning policy; near-duplicates: savepoint pair, scan settings, the search; one insert of the
    # items, one of their versions, one of their audit events (the bank's team read once): none per item, and no
    # savepoint of its own
    assert len(captured) <= 9, [q["sql"][:80] for q in captured.captured_queries]

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


def _history(bank):
    """Per item of the bank: its counter, versions, supports and audit events."""
    return {
        item.title: (
            item.support_count,
            list(item.versions.values_list("number", "action", "note", "status")),
            list(item.supports.values_list("kind", "title", "content", "cited_steps", "experience")),
            [
                (e.action, e.before, e.after)
                for e in AuditEvent.objects.filter(object_id=str(item.public_id)).order_by("created_at", "id")
            ],
        )
        for item in MemoryItem.objects.filter(bank=bank).order_by("pk")
    }


def test_lessons_found_again_are_consolidated_together_as_one_after_the_other(owner):
    """The first two proposals are lessons the bank holds (seeds 0 and 1), the third holds seed 0's too:
    three supports (two on one item) written in a constant number of queries, the same rows, versions,
    counters and audit events as proposing them one after the other."""
    one_by_one_bank, together_bank = _bank_with_seeds(owner, 0.92), _bank_with_seeds(owner, 0.92)
    common = dict(origin="success", source_task_id="t", model="m", prompt_version="v", verdict_label="success")
    one_by_one = [memory_items_propose(bank=one_by_one_bank, proposals=[p], **common)[0] for p in _proposals()]
    with CaptureQueriesContext(connection) as captured:
        together = memory_items_propose(bank=together_bank, proposals=_proposals(), **common)
    # the bank's learning policy; near-duplicates: savepoint pair, scan settings, the search; consolidation: the
    # items locked, supports, counters, latest versions, versions, audit events (the bank's team read once); the
    # new item, its version, its audit event: the same whatever the number of lessons found again
    assert len(captured) <= 14, [q["sql"][:60] for q in captured.captured_queries]
    assert sum("FOR UPDATE" in q["sql"] for q in captured.captured_queries) == 1

    seeds = {t: MemoryItem.objects.get(bank=together_bank, title=t) for t, _d, _c in SEEDS}
    assert [i.pk for i in together] == [
        seeds[SEEDS[0][0]].pk,
        seeds[SEEDS[1][0]].pk,
        seeds[SEEDS[0][0]].pk,
        together[3].pk,
    ]
    assert [getattr(i, "supported_by", None) is not None for i in together] == [True, True, True, False]
    assert [i.support_count for i in together[:3]] == [1, 1, 2]  # each entry as it was right after its support
    assert together[3].title == PROPOSED[3][0] and together[3].status == "proposed"
    assert [i.title for i in one_by_one] == [i.title for i in together]
    history = _history(together_bank)
    assert history == _history(one_by_one_bank)
    count, versions, supports, events = history[SEEDS[0][0]]
    assert count == 2 and [(n, a) for n, a, _note, _s in versions] == [
        (1, "created"),
        (2, "supported"),
        (3, "supported"),
    ]
    assert [title for _k, title, *_rest in supports] == [PROPOSED[0][0], PROPOSED[2][0]]
    assert [a for a, _b, _after in events] == [
        "memory_item.create",
        "memory_item.add_support",
        "memory_item.add_support",
    ]
    assert events[2][1]["status"] == "approved" and PROPOSED[2][0] in events[2][2]["note"]


def test_search_many_equals_search_one_by_one(owner):
    bank = _bank_with_seeds(owner)
    factories.make_bank()  # another bank's items never count
    vectors = [embed_text(item_embedding_text(title=t, description=d, content=c)) for t, d, c in PROPOSED]
    with CaptureQueriesContext(connection) as captured:
        many = near_duplicates_search_many(bank=bank, vectors=vectors)
    assert len(captured) <= 4  # savepoint pair, scan settings, one search
    assert many == [near_duplicates_search(bank=bank, vector=v) for v in vectors]
    assert any(many) and near_duplicates_search_many(bank=bank, vectors=[]) == []
    with connection.cursor() as cursor:  # its short literals are the model's float32 vectors exactly
        for vector in vectors:
            short, ours = vector_literal(vector), Vector(vector).to_text()
            cursor.execute("SELECT %s::vector::text = %s::vector::text, %s::vector = %s::vector", [short, ours] * 2)
            assert cursor.fetchone() == (True, True) and len(short) < len(ours)
            assert np.array_equal(np.array(short[1:-1].split(","), dtype=np.float32), vector)


def test_a_bad_item_stores_none_of_the_set(bank):
    proposals = [*_proposals()[:2], ProposedItem(title="  ", description="d", content="c")]
    with pytest.raises(Invalid, match="title"):
        memory_items_propose(bank=bank, proposals=proposals, origin="success")
    assert not MemoryItem.objects.filter(bank=bank).exists()
