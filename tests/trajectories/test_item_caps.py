"""Distilled item text is capped: a runaway model answer is
cut visibly in the parser, the services enforce the limits, and reviewers see
the cut on the item page."""

import json

import pytest
from django.urls import reverse

from memories.items.models import CONTENT_MAX, DESCRIPTION_MAX, TITLE_MAX, MemoryItem
from memories.items.services import memory_item_create
from reasoningbank_site.errors import Invalid
from reasoningbank_site.text import cut_text, is_cut
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import JUDGE_SUCCESS
from trajectories.models import Status
from trajectories.pipeline.parsing import parse_memory_items

pytestmark = pytest.mark.django_db

HUGE = 108_000


def _runaway_items() -> str:
    body = "Check the official page first. " + "x" * (HUGE - 31)
    return json.dumps(
        [
            {"title": "T" * 500, "description": "d" * 5000, "content": body, "steps": [2]},
            {"title": "Short one", "description": "Use it.", "content": "Do this.", "steps": [3]},
        ]
    )


def test_cut_text_keeps_the_limit_and_says_how_much_was_cut():
    text = "a" * HUGE
    cut = cut_text(text, CONTENT_MAX)
    assert len(cut) == CONTENT_MAX
    kept = cut.index(" … [cut: ")
    assert cut.endswith(f" … [cut: {HUGE - kept:,} characters]") and is_cut(cut)
    assert cut_text("short", CONTENT_MAX) == "short" and not is_cut("short")


def test_parser_cuts_each_field_visibly():
    first, second = parse_memory_items(_runaway_items(), max_items=3)
    assert (len(first.title), len(first.description), len(first.content)) == (TITLE_MAX, DESCRIPTION_MAX, CONTENT_MAX)
    assert first.content.startswith("Check the official page first.")
    assert all(is_cut(text) for text in (first.title, first.description, first.content))
    assert (second.title, second.content) == ("Short one", "Do this.")


@pytest.mark.usefixtures("eager_celery")
def test_a_108000_character_item_is_stored_cut_and_the_reviewer_sees_it(fake_llm, make_trajectory, client, owner):
    fake_llm.reply(JUDGE_SUCCESS).reply(_runaway_items())
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE, t.status_detail

    runaway = MemoryItem.objects.get(experience=t.experience, title__startswith="TTT")
    kept = runaway.content.index(" … [cut: ")
    assert len(runaway.content) == CONTENT_MAX and runaway.content.endswith(f"[cut: {HUGE - kept:,} characters]")
    assert runaway.text_was_cut
    short = MemoryItem.objects.get(experience=t.experience, title="Short one")
    assert not short.text_was_cut

    client.force_login(owner)
    page = lambda item: client.get(  # noqa: E731
        reverse("memories:item_detail", kwargs={"bank_id": t.bank.public_id, "item_id": item.public_id})
    ).content.decode()
    assert "data-text-cut" in page(runaway) and "characters]" in page(runaway)
    assert "data-text-cut" not in page(short)


def test_services_refuse_over_long_human_text(bank, owner):
    with pytest.raises(Invalid, match=f"content is at most {CONTENT_MAX}"):
        memory_item_create(bank=bank, author=owner, title="t", description="d", content="c" * (CONTENT_MAX + 1))
    with pytest.raises(Invalid, match=f"description is at most {DESCRIPTION_MAX}"):
        memory_item_create(bank=bank, author=owner, title="t", description="d" * (DESCRIPTION_MAX + 1), content="c")
    assert not MemoryItem.objects.filter(bank=bank).exists()
