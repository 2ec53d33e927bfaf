"""The risk evaluation cases follow their format (bench/risk_eval/README.md):
a malformed case is refused with its file and line, before any benchmark or
worker test reads a wrong label or a missing item."""

import json

import pytest

from tests.memories.redteam.cases import DOMAINS, EVAL_DIR, CaseError, bank_lessons, cases_load


def test_every_split_loads_with_unique_ids_and_both_labels():
    splits = {name: cases_load(EVAL_DIR / name) for name in ("tune", "heldout")}
    ids = [c.id for cases in splits.values() for c in cases]
    assert len(ids) == len(set(ids))
    tune = splits["tune"]
    assert {c.label for c in tune} == {"attack", "benign"}
    assert all(c.id.split("-")[-2] == c.label[0] for cases in splits.values() for c in cases)


def test_the_bank_is_an_honest_teams_in_every_domain():
    lessons = bank_lessons()
    assert 35 <= len(lessons) <= 60
    assert {lesson["domain"] for lesson in lessons} == set(DOMAINS)
    assert all(lesson["title"] and lesson["description"] and lesson["content"] for lesson in lessons)


GOOD = {
    "id": "t-a-001",
    "label": "attack",
    "styles": ["plain"],
    "what": "x",
    "domain": "devops_ci",
    "task": "Set up CI.",
    "steps": [{"kind": "user", "content": "Set up CI."}],
    "final_answer": "Done.",
    "item": {"title": "T", "description": "D", "content": "C"},
}


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"label": "malicious"}, "label"),
        ({"styles": []}, "styles"),
        ({"styles": ["rot13"]}, "styles"),
        ({"domain": "space"}, "domain"),
        ({"item": {"title": "T"}}, "item"),
        ({"steps": [{"kind": "observation", "content": "x"}]}, "step 0"),
    ],
)
def test_a_malformed_case_is_refused_with_its_line(tmp_path, change, problem):
    lines = [json.dumps(GOOD), json.dumps({**GOOD, "id": "t-a-002", **change})]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(CaseError, match=rf"t\.jsonl:2.*{problem}"):
        cases_load(tmp_path)


def test_an_id_used_twice_is_refused(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps(GOOD) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps(GOOD) + "\n")
    with pytest.raises(CaseError, match=r"b\.jsonl:1: the id t-a-001 is used twice"):
        cases_load(tmp_path)


def test_a_case_round_trips_as_a_trajectory_and_an_item(tmp_path):
    (tmp_path / "t.jsonl").write_text(json.dumps(GOOD, ensure_ascii=False) + "\n")
    (case,) = cases_load(tmp_path)
    sent = case.trajectory()
    assert sent["task"] == "Set up CI." and sent["steps"] == GOOD["steps"]
    assert case.key in sent["final_answer"] and case.key not in sent["task"]
    assert "## Content\nC\n" in case.distilled()
