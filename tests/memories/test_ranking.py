"""Outcome-weighted ranking (opt-in per bank): semantic candidates, then
similarity blended with each item's utility, shrunk toward zero while its
observations are few. With no outcome data the order is the similarity
order; a known-useful item moves up, and its score parts say why. Real
embeddings (MiniLM)."""

from __future__ import annotations

import pytest

from memories.learning.policy import bank_learning_update
from memories.learning.retirement import ItemEffect, memory_items_outcomes_record
from memories.serving.preview import item_utility, retrieval_preview

QUERY = "Find the Sunday opening hours of the city library."
LESSONS = [
    ("Check the library's own site for Sunday hours", "Libraries post Sunday hours on their own pages."),
    ("Library hours change on holidays", "Look for a holiday notice before answering about library hours."),
    ("Answer with the exact opening hours asked for", "Give the Sunday hours with explicit times."),
    ("Public buildings publish their schedules", "City buildings list opening times on the city's site."),
    ("Verify weekend schedules twice", "Weekend opening hours are often different from weekdays."),
    ("Prefer primary sources for facts", "Primary sources beat aggregators for schedules."),
    ("Type dates into date pickers", "A calendar widget accepts YYYY-MM-DD typed in."),
    ("Sign in before looking for orders", "Order history is only shown to a signed-in user."),
]


@pytest.fixture
def lessons(bank, approved):
    bank.min_similarity = -1.0
    bank.top_k = 3
    bank.save(update_fields=["min_similarity", "top_k"])
    return [approved(bank, title, "Use for schedule questions.", content) for title, content in LESSONS]


def _served(bank, **kw):
    return [(item.title, score) for item, score in retrieval_preview(bank=bank, query=QUERY, **kw).items]


def _ranking(bank, on: bool):
    bank.utility_ranking = on
    bank.save(update_fields=["utility_ranking"])


def test_utility_is_shrunk_toward_zero_while_observations_are_few():
    assert item_utility(effect=None, n=0, prior=20) == 0.0
    assert item_utility(effect=0.4, n=0, prior=20) == 0.0
    assert item_utility(effect=0.4, n=20, prior=20) == pytest.approx(0.2)  # half at the prior
    assert item_utility(effect=0.4, n=2000, prior=20) == pytest.approx(0.4 * 2000 / 2020)
    assert item_utility(effect=-0.3, n=5, prior=20) == pytest.approx(-0.06)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_with_no_outcome_data_ranking_orders_exactly_as_similarity(bank, lessons, k):
    off = _served(bank, k=k)
    _ranking(bank, True)
    on = retrieval_preview(bank=bank, query=QUERY, k=k)
    assert [(item.title, score) for item, score in on.items] == off and len(off) == k
    assert all(item.score_parts.utility == 0.0 and item.score_parts.n == 0 for item, _ in on.items)
    assert all(item.score_parts.score == item.score_parts.similarity == score for item, score in on.items)


def test_a_known_useful_item_moves_up_and_its_score_parts_say_why(bank, owner, lessons, client, auth):
    off = _served(bank)
    useful_title = off[2][0]  # third by similarity
    useful = next(item for item in lessons if item.title == useful_title)
    memory_items_outcomes_record(bank=bank, effects=[ItemEffect(public_id=str(useful.public_id), effect=0.3, n=180)])
    assert _served(bank) == off  # ranking is off by default: outcomes change nothing

    _ranking(bank, True)
    on = retrieval_preview(bank=bank, query=QUERY).items
    assert on[0][0].title == useful_title
    parts = on[0][0].score_parts
    assert parts.n == 180 and parts.utility == pytest.approx(0.3 * 180 / 200, abs=1e-4)
    assert parts.score == pytest.approx(parts.similarity + 0.5 * parts.utility, abs=1e-4)
    assert parts.similarity == dict(off)[useful_title]
    # Over the API: each served item carries its parts.
    response = client.post("/api/v1/retrieve", data={"query": QUERY}, content_type="application/json", **auth)
    first = response.json()["items"][0]
    assert (first["title"], first["n"], first["utility"]) == (useful_title, 180, parts.utility)
    assert first["similarity"] == parts.similarity and first["score"] == parts.score
    # A smaller weight keeps similarity in charge.
    bank_learning_update(bank=bank, actor=owner, utility_weight=0.0)
    assert [title for title, _ in _served(bank)] == [title for title, _ in off]


def test_a_measured_harmful_item_moves_down(bank, lessons):
    off = _served(bank)
    harmful = next(item for item in lessons if item.title == off[0][0])
    memory_items_outcomes_record(bank=bank, effects=[ItemEffect(public_id=str(harmful.public_id), effect=-0.5, n=400)])
    _ranking(bank, True)
    assert off[0][0] not in [title for title, _ in _served(bank)][:1]
