"""The optional LLM second opinion on a distillation's risks: off by default
(no extra call); when a bank turns it on, the LLM's findings are recorded
with the prompt version, only with excerpts found word for word; a failed
call changes nothing else."""

import json

import pytest

from memories.items.models import MemoryItem
from memories.trust.risk_models import RiskFinding
from memories.trust.services import bank_trust_policy_update
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import Status

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_celery")]

OPINION = {
    "findings": [
        {"lesson": 2, "kind": "disabled_safeguard", "excerpt": "Restate only the part of the schedule"},
        {"lesson": 1, "kind": "exfiltration", "excerpt": "words that are not in the lesson"},
        {"lesson": 7, "kind": "secret", "excerpt": "Look the fact up"},
        {"lesson": 1, "kind": "made_up_kind", "excerpt": "Look the fact up"},
    ]
}


def test_off_by_default(bank, fake_llm, make_trajectory):
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE and len(fake_llm.requests) == 2
    assert not RiskFinding.objects.exists()


def test_findings_recorded_with_the_prompt_version(bank, owner, fake_llm, make_trajectory):
    bank_trust_policy_update(bank=bank, actor=owner, llm_risk_check=True)
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD).reply("Here you go:\n" + json.dumps(OPINION))
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE and len(fake_llm.requests) == 3
    assert "<lessons>" in fake_llm.prompts[2] and "Restate only the part" in fake_llm.prompts[2]
    (finding,) = RiskFinding.objects.all()
    assert (finding.kind, finding.excerpt, finding.detector, finding.confirmed) == (
        "disabled_safeguard",
        "Restate only the part of the schedule",
        "llm:risk_check/v1",
        False,
    )
    assert finding.item == MemoryItem.objects.get(title="Answer in the asked format")


def test_a_failed_check_leaves_the_trajectory_done(bank, owner, fake_llm, make_trajectory):
    bank_trust_policy_update(bank=bank, actor=owner, llm_risk_check=True)
    fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD).error(400, "bad request")
    t = process_trajectory(make_trajectory())
    assert t.status == Status.DONE and MemoryItem.objects.filter(experience=t.experience).count() == 2
    assert not RiskFinding.objects.exists()
    fake_llm.reply(JUDGE_SUCCESS)
    fake_llm.reply(ITEMS_MD.replace("official source", "city's page").replace("asked format", "exact format"))
    fake_llm.reply("not json at all")  # an unreadable answer: no findings either
    t2 = process_trajectory(make_trajectory(task="Find the pool's hours."))
    assert t2.status == Status.DONE and len(fake_llm.requests) == 6 and not RiskFinding.objects.exists()
