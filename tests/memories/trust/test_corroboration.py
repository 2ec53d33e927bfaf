"""Corroboration before serving, an opt-in bank policy: an item is served only
when a human approved it, or when enough independent runs distilled it (and it
has no risk finding). Runs go through the real pipeline (a trajectory judged
and distilled against the fake LLM, the same lesson recorded as "seen again"
on the item), and what is served is read through the agent API."""

import pytest
from django.db import transaction
from django.urls import reverse

from accounts.teams.banks import bank_update_settings
from memories.items.consolidation import memory_item_support_record
from memories.items.models import ItemStatus, MemoryItem
from memories.review.decisions import memory_item_approve
from memories.trust.models import VerdictTier
from memories.trust.risk_models import RiskFinding
from memories.trust.services import bank_trust_policy_update
from reasoningbank_site.errors import Invalid
from tests import factories
from tests.factories import process_trajectory
from tests.trajectories.llm_answers import ITEMS_MD, JUDGE_SUCCESS
from trajectories.models import Trajectory

pytestmark = [pytest.mark.usefixtures("eager_celery")]

TITLES = {"Prefer the official source", "Answer in the asked format"}
TASK = "Find the Sunday hours of the city pool."


@pytest.fixture
def auto_on(bank, owner):
    """A bank that auto-approves safe items (no audit sample) and serves every approved item for a query."""
    bank_trust_policy_update(bank=bank, actor=owner, auto_approve=True, min_tier=VerdictTier.JUDGE, audit_share=0.0)
    bank_update_settings(bank=bank, actor=None, min_similarity=0.0)
    return bank


@pytest.fixture
def agent_api(client, bank):
    token = factories.make_token(bank)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    def served() -> set[str]:
        """What the bank serves: /retrieve and GET /memories (the surfaces test compares every other one)."""
        body = {"query": TASK, "k": 10}
        answer = client.post("/api/v1/retrieve", data=body, content_type="application/json", **auth)
        assert answer.status_code == 200, answer.content
        retrieved = {m["title"] for m in answer.json()["items"]}
        listed = {m["title"] for m in client.get("/api/v1/memories?limit=100", **auth).json()["items"]}
        assert retrieved == listed
        return listed

    return served


@pytest.fixture
def run(bank, fake_llm):
    def run(agent: str = "web-agent", **fields):
        """One run of the task, judged a success and distilled into ITEMS_MD's two lessons."""
        fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
        return process_trajectory(factories.make_trajectory(bank, task=TASK, agent=agent, **fields))

    return run


def _items(bank) -> dict[str, MemoryItem]:
    return {i.title: i for i in MemoryItem.objects.filter(bank=bank)}


def _corroborate(bank, owner, n: int = 3, distinct: str = "runs"):
    bank_trust_policy_update(
        bank=bank,
        actor=owner,
        corroboration_required=True,
        corroboration_min_sources=n,
        corroboration_distinct=distinct,
    )


def test_policy_off_serves_an_auto_approved_item_with_one_source(auto_on, run, agent_api):
    run()
    items = _items(auto_on)
    assert {i.status for i in items.values()} == {ItemStatus.APPROVED}
    assert {i.corroborating_runs for i in items.values()} == {1}
    assert agent_api() == TITLES


def test_items_wait_for_three_independent_runs_then_the_policy_approves_them(auto_on, owner, run, agent_api):
    _corroborate(auto_on, owner)
    run()
    items = _items(auto_on)
    assert {i.status for i in items.values()} == {ItemStatus.PROPOSED}
    assert {i.needs_review_reason for i in items.values()} == {
        "Corroborated by 1 of 3 independent runs: not served yet."
    }
    assert agent_api() == set()

    run()  # the same lessons distilled again: "seen again" evidence on the same two items
    items = _items(auto_on)
    assert len(items) == 2 and {i.support_count for i in items.values()} == {1}
    assert {i.needs_review_reason for i in items.values()} == {
        "Corroborated by 2 of 3 independent runs: not served yet."
    }
    assert agent_api() == set()

    run()
    items = _items(auto_on)
    assert {i.status for i in items.values()} == {ItemStatus.APPROVED}
    assert {i.corroborating_runs for i in items.values()} == {3}
    assert {i.needs_review_reason for i in items.values()} == {""}
    assert agent_api() == TITLES


def test_runs_of_one_agent_do_not_corroborate_when_agents_must_differ(auto_on, owner, run, agent_api):
    _corroborate(auto_on, owner, n=2, distinct="agents")
    run(agent="crawler-1")
    run(agent="crawler-1")
    items = _items(auto_on)
    assert {(i.corroborating_runs, i.corroborating_agents) for i in items.values()} == {(2, 1)}
    assert {i.needs_review_reason for i in items.values()} == {
        "Corroborated by 1 of 2 independent agents: not served yet."
    }
    assert agent_api() == set()
    run(agent="crawler-2")
    assert {i.status for i in _items(auto_on).values()} == {ItemStatus.APPROVED}
    assert agent_api() == TITLES


def test_rollouts_of_one_matts_group_are_one_run_and_a_run_counts_once(bank):
    group = [factories.make_done_trajectory(bank, group_id="g-1", group_size=2, external_id=f"r{n}") for n in range(2)]
    item = factories.propose_item(bank, group[0])
    Trajectory.objects.filter(pk=group[1].pk).update(experience=item.experience)
    alone = factories.make_done_trajectory(bank, external_id="r3", agent="other-agent")
    # The same run recorded twice as seen again, and another run once.
    for source in (group[1], group[1], alone):
        proposal = MemoryItem(
            bank=bank,
            title=item.title,
            description=item.description,
            content=item.content,
            origin="success",
            cited_steps=[{"trajectory": str(source.public_id), "step": 2}],
        )
        with transaction.atomic():
            assert memory_item_support_record(item_public_id=str(item.public_id), proposal=proposal, similarity=0.97)
    item.refresh_from_db()
    assert item.support_count == 3
    assert (item.corroborating_runs, item.corroborating_agents, item.corroborating_tokens) == (2, 2, 0)


def test_a_human_approval_serves_a_waiting_item_at_once(auto_on, owner, run, agent_api):
    _corroborate(auto_on, owner)
    run()
    item = _items(auto_on)["Prefer the official source"]
    memory_item_approve(item=item, author=owner)
    assert agent_api() == {"Prefer the official source"}


def test_an_item_auto_approved_before_the_policy_waits_until_a_human_approves_it(
    client, auto_on, owner, run, agent_api
):
    run()
    assert agent_api() == TITLES
    _corroborate(auto_on, owner)
    assert agent_api() == set()

    item = _items(auto_on)["Prefer the official source"]
    client.force_login(owner)
    url = reverse("memories:item_detail", kwargs={"bank_id": auto_on.public_id, "item_id": item.public_id})
    page = client.get(url).content.decode()
    assert "Corroborated by 1 of 3 independent runs" in page
    assert "Not served: the bank requires corroboration" in page
    assert 'data-action="approve"' in page  # approved, yet a human's approval is offered: it serves the item

    memory_item_approve(item=item, author=owner)  # approved already: a human approval is recorded
    assert item.versions.filter(action="approved", author=owner).exists()
    assert agent_api() == {"Prefer the official source"}
    assert "Not served" not in client.get(url).content.decode()


def test_an_item_with_a_finding_is_never_served_without_a_human(auto_on, owner, run, agent_api):
    _corroborate(auto_on, owner, n=2)
    run()
    run()
    assert agent_api() == TITLES  # corroborated by two runs, approved by the policy
    item = _items(auto_on)["Answer in the asked format"]
    # A finding, even one marked confirmed, keeps a corroborated item from serving until a human approves it.
    RiskFinding.objects.create(item=item, kind="anomaly", excerpt="asked format", detector="anomaly-1", confirmed=True)
    assert agent_api() == {"Prefer the official source"}
    memory_item_approve(item=item, author=owner)
    assert agent_api() == TITLES


def test_the_waiting_reason_and_count_show_in_the_queue_and_on_the_trust_page(client, auto_on, owner, run):
    _corroborate(auto_on, owner)
    run()
    client.force_login(owner)
    queue = client.get(reverse("memories:review", kwargs={"bank_id": auto_on.public_id})).content.decode()
    assert queue.count("Corroborated by 1 of 3 independent runs: not served yet.") == 2
    assert queue.count('data-corroboration="1/3"') == 2
    trust = client.get(reverse("memories:trust", kwargs={"bank_id": auto_on.public_id})).content.decode()
    assert trust.count("data-waiting>") == 2 and "Waiting for corroboration" in trust


@pytest.mark.parametrize("n", [1, 21, -3])
def test_a_number_of_sources_out_of_range_is_refused(client, bank, owner, n):
    with pytest.raises(Invalid, match="corroboration_min_sources"):
        bank_trust_policy_update(bank=bank, actor=owner, corroboration_min_sources=n)
    client.force_login(owner)
    form = {"min_tier": 0, "audit_percent": 10, "corroboration_required": "on", "corroboration_min_sources": n}
    answer = client.post(reverse("memories:trust", kwargs={"bank_id": bank.public_id}), form)
    assert answer.status_code == 200
    assert "Ensure this value is" in answer.content.decode()
    bank.refresh_from_db()
    assert not hasattr(bank, "trust_policy") or not bank.trust_policy.corroboration_required


def test_the_policy_is_saved_from_the_trust_page_and_audited(client, bank, owner):
    client.force_login(owner)
    form = {
        "min_tier": 0,
        "audit_percent": 10,
        "corroboration_required": "on",
        "corroboration_min_sources": 4,
        "corroboration_distinct": "tokens",
    }
    answer = client.post(reverse("memories:trust", kwargs={"bank_id": bank.public_id}), form)
    assert answer.status_code == 302
    policy = bank.trust_policy
    policy.refresh_from_db()
    assert (policy.corroboration_required, policy.corroboration_min_sources, policy.corroboration_distinct) == (
        True,
        4,
        "tokens",
    )
    from accounts.models import AuditEvent

    event = AuditEvent.objects.filter(action="bank.update_trust_policy").latest("id")
    assert event.after["corroboration_min_sources"] == 4


def test_the_review_api_item_detail_says_its_corroboration_and_a_review_token_approval_serves_it(
    client, auto_on, owner, run, agent_api
):
    item_url = "/api/v1/review/items/{}"
    review = {"HTTP_AUTHORIZATION": f"Bearer {factories.make_token(auto_on, scopes=('review',))}"}
    run()
    item = _items(auto_on)["Prefer the official source"]
    assert client.get(item_url.format(item.public_id), **review).json()["corroboration"] is None  # policy off

    _corroborate(auto_on, owner)
    detail = client.get(item_url.format(item.public_id), **review).json()
    assert detail["corroboration"] == {
        "sources": 1,
        "required": 3,
        "distinct": "runs",
        "met": False,
        "human_approved": False,
        "policy_allows": False,
    }
    assert agent_api() == set()
    approved = client.post(item_url.format(item.public_id) + "/approve", {}, content_type="application/json", **review)
    assert approved.status_code == 200, approved.content
    assert approved.json()["corroboration"]["human_approved"] is True
    assert agent_api() == {"Prefer the official source"}


def test_the_migration_counts_the_sources_of_items_learnt_before_it(auto_on, run):
    import importlib

    from django.apps import apps

    run()
    run(agent="another-agent")
    MemoryItem.objects.filter(bank=auto_on).update(corroborating_runs=0, corroborating_agents=0, corroborating_tokens=0)
    importlib.import_module("memories.migrations.0028_corroboration").count_sources(apps, None)
    counts = {(i.corroborating_runs, i.corroborating_agents) for i in _items(auto_on).values()}
    assert counts == {(2, 2)}


def test_runs_sent_with_one_token_do_not_corroborate_when_tokens_must_differ(
    client, auto_on, owner, fake_llm, agent_api
):
    _corroborate(auto_on, owner, n=2, distinct="tokens")
    first, second = factories.make_token(auto_on), factories.make_token(auto_on)

    def send(token: str, n: int):
        fake_llm.reply(JUDGE_SUCCESS).reply(ITEMS_MD)
        body = {"task": TASK, "steps": factories.STEPS, "final_answer": "12-17", "external_id": f"run-{n}"}
        sent = client.post(
            "/api/v1/trajectories", data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert sent.status_code in (200, 201, 202), sent.content
        process_trajectory(Trajectory.objects.get(bank=auto_on, external_id=f"run-{n}"))

    send(first, 1)
    send(first, 2)
    items = _items(auto_on)
    assert {(i.corroborating_runs, i.corroborating_tokens) for i in items.values()} == {(2, 1)}
    assert agent_api() == set()
    send(second, 3)
    assert {i.status for i in _items(auto_on).values()} == {ItemStatus.APPROVED}
    assert agent_api() == TITLES


def test_an_item_merged_in_brings_its_runs(bank, owner):
    from memories.review.decisions import memory_item_merge

    first, second = (factories.make_done_trajectory(bank, external_id=f"m{n}", agent=f"a{n}") for n in range(2))
    into = factories.propose_item(bank, first, title="Prefer the official source")
    item = factories.propose_item(bank, second, title="Use the institution's own site")
    assert (into.corroborating_runs, item.corroborating_runs) == (1, 1)
    memory_item_merge(item=item, into=into, author=owner)
    into.refresh_from_db()
    assert (into.corroborating_runs, into.corroborating_agents) == (2, 2)
