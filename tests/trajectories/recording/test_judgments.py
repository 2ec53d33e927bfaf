"""Judgments (trajectories.judging.verdicts): the effective verdict, one LLM
judgment per prompt version, and refused values."""

import pytest

from trajectories.ingest.record import trajectory_ingest
from trajectories.judging.verdicts import judgment_record
from trajectories.models import Judgment

VALID = {"task": "Book a table for two", "steps": [{"thought": "open the site", "action": "goto('/')"}]}


def _trajectory(bank):
    return trajectory_ingest(bank=bank, token=None, data=dict(VALID))[0]


def test_effective_verdict_human_over_agent_over_llm(bank):
    trajectory = _trajectory(bank)
    judgment_record(trajectory=trajectory, source="llm", label="success", prompt_version="v1")
    assert trajectory.verdict == "success"
    judgment_record(trajectory=trajectory, source="agent", label="failure")
    assert trajectory.verdict == "failure"  # trusted agent signal beats the LLM
    judgment_record(trajectory=trajectory, source="llm", label="success", prompt_version="v2")
    assert trajectory.verdict == "failure"
    judgment_record(trajectory=trajectory, source="human", label="success")
    assert trajectory.verdict == "success"
    judgment_record(trajectory=trajectory, source="agent", label="failure")
    assert trajectory.verdict == "success"  # a human judgment is never outranked
    judgment_record(trajectory=trajectory, source="human", label="failure")
    trajectory.refresh_from_db()
    assert trajectory.verdict == "failure"  # the latest human one
    assert trajectory.judgments.count() == 6  # appended, never overwritten


def test_llm_judgment_is_recorded_once_per_prompt_version(bank):
    trajectory = _trajectory(bank)
    first = judgment_record(trajectory=trajectory, source="llm", label="failure", prompt_version="judge-v1")
    again = judgment_record(trajectory=trajectory, source="llm", label="success", prompt_version="judge-v1")
    assert again.pk == first.pk and again.label == "failure"
    assert Judgment.objects.filter(trajectory=trajectory).count() == 1
    trajectory.refresh_from_db()
    assert trajectory.verdict == "failure"


def test_a_recorded_judgment_is_stored_as_create_stores_it(bank):
    """judgment_record appends each judgment in order, stored as ``create`` stores it."""
    trajectory = _trajectory(bank)
    first = judgment_record(trajectory=trajectory, source="llm", label="failure", prompt_version="judge-v1")
    second = judgment_record(trajectory=trajectory, source="human", label="success", rationale="checked")
    stored = list(Judgment.objects.filter(trajectory=trajectory).order_by("created_at", "id"))
    assert [j.pk for j in stored] == [first.pk, second.pk] and stored[1].rationale == "checked"
    assert not first._state.adding and first.created_at == Judgment.objects.get(pk=first.pk).created_at
    assert trajectory.verdict == "success"


@pytest.mark.parametrize("source, label", [("robot", "success"), ("llm", "meh")])
def test_judgment_record_rejects_unknown_values(bank, source, label):
    with pytest.raises(ValueError):
        judgment_record(trajectory=_trajectory(bank), source=source, label=label)
