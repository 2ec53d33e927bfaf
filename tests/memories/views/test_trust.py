"""The bank's trust page: the policy (admins change it), the auto-approval
record with the audit disagreement rate, the audit sample's answers and the
bulk undo; as its owner, a viewer, another team's member and anonymously."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.items.models import ItemStatus
from memories.trust.models import AutoApproval, TrustPolicy, VerdictTier
from memories.trust.services import bank_trust_policy_update, memory_items_auto_approve
from tests.factories import propose_item


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
    client.post(_url(bank, "trust_audit", item_id=auto_approved.item.public_id), {"agree": "0"})
    auto_approved.refresh_from_db()
    auto_approved.item.refresh_from_db()
    assert auto_approved.audit_verdict == "disagree" and auto_approved.audited_by == reviewer
    assert auto_approved.item.status == ItemStatus.PROPOSED
    page = client.get(_url(bank)).content.decode()
    assert "data-audit" not in page and "<strong data-disagreement>100 %</strong>" in page


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
