"""Reviewers' decisions as few-shot examples (trajectories.judging.few_shot): chosen
by similarity, never the trajectory at hand, its task_id or the held-out
split, bounded in characters, recorded as ``+fs`` in the version, and off
unless the bank turns them on (a validated setting)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from accounts.errors import AccountsInvalid
from accounts.teams.banks import bank_update_settings
from memories.items.models import ItemStatus
from memories.review.decisions import memory_item_approve, memory_item_reject
from tests.factories import process_trajectory, propose_item, record_verdict
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_FAILURE
from trajectories.judging.few_shot import distill_examples, in_holdout, judge_examples
from trajectories.models import JudgmentSource

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

_seq = itertools.count()


def task_id(*, held_out: bool) -> str:
    """A fresh task id on the asked side of the split."""
    while True:
        candidate = f"task-{next(_seq)}"
        if in_holdout(SimpleNamespace(task_id=candidate)) == held_out:
            return candidate


def corrected(make_trajectory, task: str, *, held_out: bool = False, tid: str | None = None, reason: str = ""):
    """A trajectory the LLM called a success and a reviewer relabelled a failure."""
    t = make_trajectory(task=task, task_id=tid or task_id(held_out=held_out), status="done")
    record_verdict(t, "success")
    record_verdict(t, "failure", source=JudgmentSource.HUMAN, rationale=reason)
    return t


def enable(bank, **values):
    return bank_update_settings(bank=bank, actor=None, few_shot_enabled=True, **values)


def test_judge_prompt_shows_the_most_similar_correction_with_the_reviewers_reason(bank, fake_llm, make_trajectory):
    bank = enable(bank)
    corrected(make_trajectory, "Find the opening hours of the town museum on Mondays.", reason="hours were guessed")
    corrected(make_trajectory, "Find the opening hours of the public library on Sundays.", reason="closest")
    corrected(make_trajectory, "Compute the quarterly tax of a small company.", reason="wrong rate")
    fake_llm.reply(JUDGE_FAILURE).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory(task="Find the opening hours of the city library on Sundays."))

    prompt = fake_llm.prompts[0]
    examples = prompt[: prompt.index("<trajectory>\n<task>")]
    assert 'The LLM judge said SUCCESS; a reviewer decided FAILURE because: "hours were guessed"' in examples
    assert examples.index("public library on Sundays") < examples.index("town museum on Mondays")  # closest first
    assert "quarterly tax" not in examples  # below the similarity floor
    assert t.judgments.get(source="llm").prompt_version == "judge/v1+fs"


def test_never_the_same_task_id_nor_the_held_out_split(bank, fake_llm, make_trajectory):
    bank = enable(bank)
    corrected(make_trajectory, "Find the opening hours of the city library on Sundays.", tid="lib-1", reason="SAME")
    corrected(make_trajectory, "Find the opening hours of the city library on Saturdays.", held_out=True, reason="HELD")
    t = make_trajectory(task="Find the opening hours of the city library on Sundays.", task_id="lib-1")
    assert judge_examples(trajectory=t, budget=4000) == ""

    fake_llm.reply(JUDGE_FAILURE).reply(ITEMS_MD)
    process_trajectory(t)
    assert "SAME" not in fake_llm.prompts[0] and "HELD" not in fake_llm.prompts[0]
    assert t.judgments.get(source="llm").prompt_version == "judge/v1"  # no examples: the plain version


def test_the_trajectory_itself_is_never_its_own_example(bank, make_trajectory):
    t = corrected(make_trajectory, "Find the opening hours of the city library on Sundays.", reason="OWN")
    t.refresh_from_db()
    assert judge_examples(trajectory=t, budget=4000) == ""


def test_examples_stay_within_the_budget(bank, make_trajectory):
    for n in range(6):
        corrected(make_trajectory, f"Find the opening hours of library number {n} on Sundays.", reason="x" * 250)
    t = make_trajectory(task="Find the opening hours of the city library on Sundays.")
    small, large = judge_examples(trajectory=t, budget=1500), judge_examples(trajectory=t, budget=20000)
    assert 0 < len(small) <= 1500
    assert small.count("<example ") == 1 and large.count("<example ") == 5  # MAX_EXAMPLES


def test_off_by_default_and_the_setting_is_validated(bank, fake_llm, make_trajectory):
    corrected(make_trajectory, "Find the opening hours of the town museum on Mondays.", reason="guessed")
    fake_llm.reply(JUDGE_FAILURE).reply(ITEMS_MD)
    process_trajectory(make_trajectory())
    assert "<examples>" not in fake_llm.prompts[0]
    with pytest.raises(AccountsInvalid, match="Between 500 and 20,000"):
        bank_update_settings(bank=bank, actor=None, few_shot_max_chars=10)


def test_distill_prompt_shows_approved_and_rejected_items_of_other_tasks(bank, fake_llm, make_trajectory, owner):
    bank = enable(bank)
    source = make_trajectory(task="Find the opening hours of the town museum.", task_id="museum", status="done")
    good = propose_item(bank, source, title="Check the official schedule page", source_task_id="museum")
    memory_item_approve(item=good, author=owner)
    bad = propose_item(bank, source, title="Trust the first search hit", source_task_id="museum")
    memory_item_reject(item=bad, author=owner, reason="too specific to one site")
    same_task = make_trajectory(task="Find the library hours.", task_id="lib-2", status="done")
    mine = propose_item(bank, same_task, title="Same task lesson", source_task_id="lib-2")
    memory_item_approve(item=mine, author=owner)
    assert bad.status == ItemStatus.REJECTED

    t = make_trajectory(task="Find the opening hours of the city library on Sundays.", task_id="lib-2")
    block = distill_examples(trajectory=t, budget=4000)
    assert 'decision="APPROVED">\nTitle: Check the official schedule page' in block
    assert 'decision="REJECTED">\nTitle: Trust the first search hit' in block
    assert 'Reason: "too specific to one site"' in block
    assert "Same task lesson" not in block

    fake_llm.reply(JUDGE_FAILURE).reply(ITEMS_MD)
    process_trajectory(t)
    assert "Check the official schedule page" in fake_llm.prompts[1]
    assert t.experience.items.first().prompt_version == "distill_failure/v1+fs"
