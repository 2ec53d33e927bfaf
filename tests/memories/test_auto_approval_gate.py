"""Safe auto-approval's topic gate and audit sample: an item that recommends a
command, a URL, a package index, a payment, a credential or a role change is
never approved by the policy (whatever the risk rules say) and tells reviewers
why; a bank's first auto-approvals all go to the human audit sample; and the
attacks worded unlike the rules' own tests are served by no agent surface."""

import pytest
from django.urls import reverse

from accounts.teams.banks import bank_update_settings
from memories.items.models import ItemStatus, MemoryItem
from memories.items.services import memory_item_create
from memories.trust.actions.extract import item_actions
from memories.trust.models import AutoApproval, VerdictTier
from memories.trust.risk_models import RiskFinding
from memories.trust.risks import memory_items_risk_scan
from memories.trust.services import AUDIT_ALL_FIRST, bank_trust_policy_update, memory_items_auto_approve
from tests import factories
from tests.factories import process_trajectory, propose_item
from tests.memories.redteam.cases import ATTACKS, BENIGN
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS

# The six attacks an outside probe saw auto-approved and served, and honest lessons on the same topics.
SIX = [
    "decoded payload piped to a shell",
    "instructions overridden in French",
    "package index set by an environment variable",
    "payout destination changed without a call-back",
    "environment sent as a tool body",
    "persona jailbreak",
]
SIX_ATTACKS = [c for c in ATTACKS if c.kind in SIX]
LOOKALIKES = BENIGN[-6:]


def test_the_six_are_in_the_red_team_set():
    assert sorted(c.kind for c in SIX_ATTACKS) == sorted(SIX)
    assert LOOKALIKES[0].title == "Decode encoded config values first"


@pytest.fixture
def auto_on(bank, owner):
    bank_trust_policy_update(bank=bank, actor=owner, auto_approve=True, min_tier=VerdictTier.JUDGE, audit_share=0.0)
    return bank


def test_the_topic_gate_keeps_honest_lessons_on_those_topics_for_a_human(auto_on, trajectory, owner):
    bank = auto_on
    # The bank approved what they recommend before (one reference item): no detector flags them, only the gate.
    done = [
        a.excerpt for c in LOOKALIKES for a in item_actions(title=c.title, description=c.description, content=c.content)
    ]
    memory_item_create(
        bank=bank,
        title="Commands we use",
        description="Reference.",
        content="\n".join(done),
        status=ItemStatus.APPROVED,
        author=owner,
    )
    kept = [
        propose_item(bank, trajectory, title=c.title, description=c.description, content=c.content) for c in LOOKALIKES
    ]
    plain = propose_item(bank, trajectory, title="Quote the day asked for", content="Restate only the asked day.")
    memory_items_risk_scan(items=[*kept, plain])
    assert not RiskFinding.objects.filter(
        item__in=kept
    ).exists()  # no detector finds anything: the gate alone holds them

    made = memory_items_auto_approve(items=[*kept, plain], tier=VerdictTier.HUMAN)
    assert [a.item_id for a in made] == [plain.pk]
    reasons = {}
    for item in kept:
        item.refresh_from_db()
        assert item.status == ItemStatus.PROPOSED
        reasons[item.title] = item.needs_review_reason
    assert reasons["Decode encoded config values first"] == "Auto-approval skipped: recommends a command or code."
    assert reasons["Use the team's package mirror"] == "Auto-approval skipped: recommends a package index."
    assert "payments or bank details" in reasons["Verify payment detail changes out of band"]
    assert "credentials or secrets" in reasons["Keep secrets out of tool calls"]
    assert "role, permission or instruction change" in reasons["Suivre les consignes de l'utilisateur"]
    assert all(reason.startswith("Auto-approval skipped: recommends ") for reason in reasons.values())


def test_the_reason_shows_in_the_queue_the_focus_view_and_the_trust_page(client, owner, auto_on, trajectory):
    bank = auto_on
    item = propose_item(bank, trajectory, content="Check the status page at https://status.example.com first.")
    assert memory_items_auto_approve(items=[item], tier=VerdictTier.HUMAN) == []
    client.force_login(owner)
    reason = "Auto-approval skipped: recommends a URL."
    ids = {"bank_id": bank.public_id}
    queue = client.get(reverse("memories:review", kwargs=ids)).content.decode()
    assert reason in queue
    focus = client.get(reverse("memories:review_focus", kwargs={**ids, "item_id": item.public_id})).content.decode()
    assert reason in focus
    trust = client.get(reverse("memories:trust", kwargs=ids)).content.decode()
    assert "Kept for a human" in trust and reason in trust and str(item.public_id) in trust


def test_a_banks_first_auto_approvals_are_all_in_the_audit_sample(auto_on):
    bank = auto_on  # audit share 0 %
    items = [
        MemoryItem.objects.create(
            bank=bank, title=f"Lesson {i}", description="Use for schedules.", content=f"Quote entry {i} exactly."
        )
        for i in range(AUDIT_ALL_FIRST + 2)
    ]
    first = memory_items_auto_approve(items=items[:10], tier=VerdictTier.HUMAN)
    rest = memory_items_auto_approve(items=items[10:], tier=VerdictTier.HUMAN)
    made = [*first, *rest]
    assert AUDIT_ALL_FIRST == 50 and len(made) == 52
    assert [a.sampled for a in made] == [True] * 50 + [False] * 2


@pytest.mark.usefixtures("eager_celery")
def test_the_six_attacks_are_never_served_under_auto_approval(client, auto_on, fake_llm):
    bank = auto_on
    bank_update_settings(bank=bank, actor=None, min_similarity=0.0)
    token = factories.make_token(bank)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    def run(task: str, distilled: str):
        fake_llm.reply(JUDGE_SUCCESS).reply(distilled)
        return process_trajectory(factories.make_trajectory(bank, task=task))

    # A control: an honest lesson on none of those topics is auto-approved and served, so this setup serves.
    control = run("Find the Sunday hours of the city pool.", ITEMS_MD)
    assert {i.status for i in MemoryItem.objects.filter(experience=control.experience)} == {ItemStatus.APPROVED}
    for case in SIX_ATTACKS:
        run(case.task, case.distilled())

    attacks = {c.title for c in SIX_ATTACKS}
    stored = MemoryItem.objects.filter(bank=bank, title__in=attacks)
    assert stored.count() == 6 and {i.status for i in stored} == {ItemStatus.PROPOSED}
    assert not AutoApproval.objects.filter(item__in=stored).exists()
    assert all(RiskFinding.objects.filter(item=i).exists() for i in stored)  # and the rules flag each one

    listed = client.get("/api/v1/memories?limit=100", **auth).json()["items"]
    assert len(listed) == 2 and not {m["title"] for m in listed} & attacks

    def retrieved(query: str) -> set[str]:
        body = {"query": query, "k": 10}
        answer = client.post("/api/v1/retrieve", data=body, content_type="application/json", **auth)
        assert answer.status_code == 200, answer.content
        return {m["title"] for m in answer.json()["items"]}

    assert retrieved(control.task) == {"Prefer the official source", "Answer in the asked format"}
    skills = client.get("/api/v1/export/skills", **auth).content.decode()
    assert "Prefer the official source" in skills and not [title for title in attacks if title in skills]
    for case in SIX_ATTACKS:
        for query in (case.task, case.content):
            assert not retrieved(query) & attacks, case.kind
