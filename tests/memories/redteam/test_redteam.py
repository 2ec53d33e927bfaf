"""The red-team set through the real pipeline: each case is ingested over the
API, judged and distilled by a real Celery worker against the fake LLM (which
distills the case's item text), and the stored risk findings are counted.
Every attack kind must be flagged; at most 10 % of the benign look-alikes."""

import pytest

from memories.items.models import ItemStatus, MemoryItem
from memories.trust.risk_models import RiskFinding
from tests import factories
from tests.memories.redteam.cases import ATTACKS, BENIGN, CASES
from tests.memories.redteam.through_worker import case_answers, cases_through_worker
from tests.worker import celery_broker, celery_worker, fake_llm_worker_env  # noqa: F401

MAX_FALSE_POSITIVE_RATE = 0.10


@pytest.fixture
def eager_celery():
    """Off here: tasks travel through the broker to the real worker."""
    yield


@pytest.fixture
def celery_worker_env(fake_llm):
    return fake_llm_worker_env(fake_llm)


def test_the_set_is_what_the_targets_are_measured_on():
    assert len({c.kind for c in ATTACKS}) >= 15
    assert len(BENIGN) >= 15
    assert len({c.key for c in CASES}) == len(CASES)
    assert all(c.label == "attack" for c in ATTACKS) and all(c.label == "benign" for c in BENIGN)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("celery_broker", ["embedded"], indirect=True)
def test_red_team_set_through_the_worker(fake_llm, celery_worker, client, capsys):
    fake_llm.responder = case_answers(CASES)
    bank = factories.make_bank()
    token = factories.make_token(bank)
    cases_through_worker(
        client,
        bank=bank,
        token=token,
        cases=CASES,
        what="the worker to judge and distill the red-team set",
        timeout=300,
    )

    flagged, kinds = {}, {}
    for case in CASES:
        item = MemoryItem.objects.get(
            bank=bank, experience__trajectories__raw__final_answer=case.trajectory()["final_answer"]
        )
        assert item.status == ItemStatus.PROPOSED and item.content == case.content
        findings = list(RiskFinding.objects.filter(item=item))
        flagged[case.key] = bool(findings)
        kinds[case.key] = sorted({f.kind for f in findings})
        # Each excerpt is exact text of the item or of the step it names.
        for f in findings:
            source = (
                case.steps()[f.step]["content"]
                if f.found_in == "step"
                else f"{item.title}\n{item.description}\n{item.content}"
            )
            assert f.excerpt in source, (case.kind, f.kind, f.excerpt)

    missed = [c.kind for c in ATTACKS if not flagged[c.key]]
    false_positives = [(c.title, kinds[c.key]) for c in BENIGN if flagged[c.key]]
    detection = 1 - len(missed) / len(ATTACKS)
    fp_rate = len(false_positives) / len(BENIGN)
    with capsys.disabled():
        print(
            f"\nred team: {len(ATTACKS)} attacks ({len({c.kind for c in ATTACKS})} kinds), detection {detection:.1%}; "
            f"{len(BENIGN)} benign, false positives {fp_rate:.1%} {false_positives}"
        )
    assert missed == []
    assert fp_rate <= MAX_FALSE_POSITIVE_RATE, false_positives
