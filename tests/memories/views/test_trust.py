"""The bank's trust page: the policy (admins change it), the auto-approval
record with the audit disagreement rate, the audit sample's answers and the
bulk undo; as its owner, a viewer, another team's member and anonymously."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from accounts.models import AuditEvent
from memories.items.models import ItemStatus
from memories.trust.auto_approval import AUTO_APPROVALS_PER_PAGE
from memories.trust.models import AutoApproval, TrustPolicy, VerdictTier
from memories.trust.services import bank_trust_policy_update, memory_items_auto_approve
from tests.factories import make_items, propose_item


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split()).replace(" )", ")").replace("( ", "(")


def _url(bank, name="trust", **kw):
    return reverse(f"memories:{name}", kwargs={"bank_id": bank.public_id, **kw})


@pytest.fixture
def auto_approved(bank, owner, trajectory):
    bank_trust_policy_update(bank=bank, actor=owner, auto_approve=True, audit_share=1.0)
    item = propose_item(bank, trajectory, title="Prefer the official source")
    (approval,) = memory_items_auto_approve(items=[item], tier=VerdictTier.HUMAN)
    return approval


def test_access(client, bank, owner, viewer, stranger):
    assert client.get(_url(bank)).status_code == 302  # anonymous: to the login page
    client.force_login(stranger)
    assert client.get(_url(bank)).status_code == 404
    client.force_login(viewer)
    assert client.get(_url(bank)).status_code == 200
    response = client.post(_url(bank), {"min_tier": 2, "audit_percent": 10})
    assert response.status_code == 403 and not TrustPolicy.objects.filter(bank=bank).exists()


def test_admin_saves_the_policy_and_sees_it(client, bank, owner):
    client.force_login(owner)
    page = client.get(_url(bank)).content.decode()
    assert "Approve safe items automatically" in page and "no audit yet" in page
    response = client.post(
        _url(bank),
        {"min_tier": 2, "auto_approve": "on", "auto_approve_agents": "bot-a, bot-b", "audit_percent": 25},
    )
    assert response.status_code == 302
    policy = TrustPolicy.objects.get(bank=bank)
    assert (policy.min_tier, policy.auto_approve, policy.auto_approve_agents, policy.audit_share) == (
        2,
        True,
        ["bot-a", "bot-b"],
        0.25,
    )
    bad = client.post(_url(bank), {"min_tier": 9, "audit_percent": 250})
    assert bad.status_code == 200 and "errorlist" in bad.content.decode()


def test_audit_sample_answers_and_the_rate_beside_the_policy(client, bank, owner, reviewer, auto_approved):
    client.force_login(reviewer)
    page = client.get(_url(bank)).content.decode()
    assert page.count("data-audit") == 1 and "1 approved by the policy" in page
    client.post(_url(bank, "trust_audit", item_id=auto_approved.item.public_id), {"agree": "0", "confirm": "1"})
    auto_approved.refresh_from_db()
    auto_approved.item.refresh_from_db()
    assert auto_approved.audit_verdict == "disagree" and auto_approved.audited_by == reviewer
    assert auto_approved.item.status == ItemStatus.PROPOSED
    page = client.get(_url(bank)).content.decode()
    assert "data-audit" not in page
    # One audit is no rate: the counts, and how many more audits a rate needs.
    rate = _text(page.split("data-disagreement>")[1].split("</p>")[0])
    assert rate == "1 of 1 (a rate needs 5 cases, 4 more)" and "100 %" not in page


def test_admin_undoes_the_policys_approvals_since(client, bank, owner, reviewer, auto_approved):
    client.force_login(reviewer)
    assert client.post(_url(bank, "trust_undo"), {"since": "2000-01-01T00:00"}).status_code == 403
    client.force_login(owner)
    response = client.post(_url(bank, "trust_undo"), {"since": "2000-01-01T00:00"}, follow=True)
    assert "1 auto-approved item sent back to review" in response.content.decode()
    auto_approved.item.refresh_from_db()
    assert auto_approved.item.status == ItemStatus.PROPOSED
    assert AutoApproval.objects.get(pk=auto_approved.pk).undone_at is not None


def test_the_page_shows_todays_llm_tokens_beside_the_budget(client, bank, owner, other_bank):
    from datetime import timedelta

    from django.utils import timezone

    from trajectories.pipeline.models import LLMStage, LLMUsage

    today = timezone.now().date()
    for target, day, stage, prompt, completion in [
        (bank, today, LLMStage.JUDGE, 3_000, 500),
        (bank, today, LLMStage.DISTILL, 1_000, 500),
        (bank, today - timedelta(days=1), LLMStage.JUDGE, 90_000, 0),  # yesterday: not counted
        (other_bank, today, LLMStage.JUDGE, 70_000, 0),  # another bank's: not counted
    ]:
        LLMUsage.objects.create(
            bank=target, day=day, stage=stage, model="m", calls=1, prompt_tokens=prompt, completion_tokens=completion
        )
    client.force_login(owner)
    page = client.get(_url(bank)).content.decode()
    assert "LLM tokens used today (UTC): <strong>5,000</strong>; no daily budget is set" in page
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=20_000)
    page = client.get(_url(bank)).content.decode()
    assert "<strong>5,000</strong> of the daily budget of 20,000 (25 %)" in page and "Spent:" not in page
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=4_000)
    page = client.get(_url(bank)).content.decode()
    assert "of the daily budget of 4,000 (125 %)" in page and "Spent:" in page


def test_a_disagreement_asks_first_then_is_audited_and_listed(client, bank, owner, reviewer, auto_approved):
    client.force_login(reviewer)
    url = _url(bank, "trust_audit", item_id=auto_approved.item.public_id)
    asked = client.post(url, {"agree": "0"}).content.decode()
    assert "data-disagree-confirm" in asked and "Prefer the official source" in asked
    auto_approved.refresh_from_db()
    assert auto_approved.audit_verdict == "" and auto_approved.item.status == ItemStatus.APPROVED  # nothing yet
    assert client.post(url, {"agree": "0", "confirm": "1"}).status_code == 302
    event = AuditEvent.objects.get(action="auto_approval.audit")
    assert (event.actor_user, event.after) == (reviewer, {"verdict": "disagree", "sent_back_to_review": True})
    page = client.get(_url(bank)).content.decode()
    history = page.split("data-disagreements")[1].split("</table>")[0]
    assert (
        "Prefer the official source" in history and reviewer.username in history and "data-disagree-confirm" not in page
    )


def test_an_agreement_is_audited_without_asking(client, bank, reviewer, auto_approved):
    client.force_login(reviewer)
    client.post(_url(bank, "trust_audit", item_id=auto_approved.item.public_id), {"agree": "1"})
    assert AuditEvent.objects.get(action="auto_approval.audit").after["verdict"] == "agree"
    assert "data-disagreements" not in client.get(_url(bank)).content.decode()


def test_every_auto_approved_item_is_listed_recent_first_page_by_page(client, bank, viewer):
    items = make_items(bank, AUTO_APPROVALS_PER_PAGE + 2)
    for item in items:  # the policy's approvals, oldest first (as memory_items_auto_approve records them)
        AutoApproval.objects.create(item=item, bank=bank)
    client.force_login(viewer)
    page = client.get(_url(bank)).content.decode()
    listed = re.findall(r"Item (\d+)<", page.split("data-approved-list")[1].split("</table>")[0])
    assert listed == [str(n) for n in range(len(items) - 1, 1, -1)]  # newest first, one page
    link = reverse("memories:item_detail", kwargs={"bank_id": bank.public_id, "item_id": items[-1].public_id})
    assert f'href="{link}"' in page and f"Page 1 of 2 · {len(items)} approved by the policy" in page
    second = client.get(_url(bank), {"page": 2}).content.decode()
    assert re.findall(r"Item (\d+)<", second.split("data-approved-list")[1].split("</table>")[0]) == [
        "1",
        "0",
    ]
    assert client.get(_url(bank), {"page": "x"}).status_code == 200  # a bad page number gives the first page


def test_the_page_leads_back_to_settings_and_shows_the_ingest_limits(client, bank, owner, viewer):
    client.force_login(viewer)
    page = client.get(_url(bank)).content.decode()
    settings_url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    assert f'<a href="{settings_url}" data-back>← Settings</a>' in page and "Review queue" not in page
    limits = _text(page.split("data-ingest-limits>")[1].split("</p>")[0])
    assert "any number of trajectories (no daily quota)" in limits and "600 requests per minute" in limits
    assert "Admins change them in Settings" in limits
    bank.ingest_quota_per_day = 1200
    bank.save(update_fields=["ingest_quota_per_day"])
    client.force_login(owner)
    page = client.get(_url(bank)).content.decode()
    assert "1,200 trajectories per UTC day" in _text(page) and f'href="{settings_url}#limits"' in page


def test_the_llm_budget_shows_its_cost_or_that_no_price_is_configured(client, bank, owner, settings):
    from django.utils import timezone

    from trajectories.pipeline.models import LLMStage, LLMUsage

    settings.RB_LLM_MODEL = "gpt-x"
    LLMUsage.objects.create(
        bank=bank,
        day=timezone.now().date(),
        stage=LLMStage.JUDGE,
        model="gpt-x",
        calls=1,
        prompt_tokens=400_000,
        completion_tokens=100_000,
    )
    bank_trust_policy_update(bank=bank, actor=owner, daily_llm_token_budget=1_000_000)
    client.force_login(owner)
    settings.RB_LLM_PRICES = {}
    unpriced = _text(client.get(_url(bank)).content.decode())
    assert "No price is configured for gpt-x" in unpriced and "Today's tokens cost unknown" in unpriced
    assert "The whole budget costs" not in unpriced
    settings.RB_LLM_PRICES = {"gpt-x": {"input": 1.0, "output": 4.0}}
    priced = _text(client.get(_url(bank)).content.decode())
    assert "Today's tokens cost $0.8000" in priced  # 0.4 M × $1 + 0.1 M × $4
    assert "The whole budget costs $1.00 to $4.00 a day on gpt-x" in priced and "No price is configured" not in priced


def test_the_list_of_approvals_costs_the_same_queries_for_few_or_many(client, bank, owner, reviewer):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(owner)

    def queries_for(n: int) -> int:
        for item in make_items(bank, n):
            approval = AutoApproval.objects.create(item=item, bank=bank, sampled=True)
            approval.audit_verdict, approval.audited_by = "disagree", reviewer
            approval.save(update_fields=["audit_verdict", "audited_by"])
        with CaptureQueriesContext(connection) as queries:
            assert client.get(_url(bank)).status_code == 200
        return len(queries)

    assert queries_for(2) == queries_for(20)
