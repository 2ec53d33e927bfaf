"""Creating a bank, its settings page, archiving and unarchiving it."""

import pytest
from django.urls import reverse

from accounts.models import AuditEvent, Bank
from tests.accounts.views import bank_url


@pytest.mark.parametrize(
    "who,status", [("owner", 302), ("admin", 302), ("reviewer", 403), ("viewer", 403), ("stranger", 404)]
)
def test_bank_create_needs_admin(as_, people, team, who, status):
    url = reverse("accounts:bank_create", kwargs={"team_id": team.public_id})
    response = as_(people[who]).post(url, {"name": "Coding agents", "retrieval_mode": "items", "top_k": 3})
    assert response.status_code == status
    assert Bank.objects.filter(name="Coding agents").exists() == (status == 302)


@pytest.mark.parametrize(
    "who,status", [("owner", 200), ("admin", 200), ("reviewer", 200), ("viewer", 200), ("stranger", 404)]
)
def test_bank_settings_page_access(as_, people, bank, who, status):
    response = as_(people[who]).get(reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id}))
    assert response.status_code == status
    if who == "viewer":
        assert "admins and owners change them" in response.content.decode()


def _settings_post(**over):
    data = {
        "name": "Web agents",
        "description": "",
        "retrieval_mode": "experiences",
        "top_k": 1,
        "min_similarity": 0.2,
        "duplicate_threshold": 0.95,
        "trust_agent_outcome": "on",
        "reward_threshold": 0.8,
        "judge_model": "judge-x",
        "distill_model": "",
        "holdout_fraction": 0.25,
        "item_holdout_fraction": 0.1,
        "few_shot_max_chars": 4000,
        "rate_limit_per_minute": 120,
    }
    data.update(over)
    return data


def test_admin_saves_settings_and_it_is_audited(as_, people, bank):
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    assert as_(people["admin"]).post(url, _settings_post()).status_code == 302
    bank.refresh_from_db()
    assert (
        bank.retrieval_mode,
        bank.top_k,
        bank.trust_agent_outcome,
        bank.holdout_fraction,
        bank.item_holdout_fraction,
        bank.rate_limit_per_minute,
    ) == (
        "experiences",
        1,
        True,
        0.25,
        0.1,
        120,
    )
    event = AuditEvent.objects.get(action="bank.update_settings")
    assert event.actor_user == people["admin"] and event.after["judge_model"] == "judge-x"


def test_invalid_settings_rerender_with_errors(as_, people, bank):
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    response = as_(people["owner"]).post(url, _settings_post(top_k=0, holdout_fraction=3, item_holdout_fraction=0.9))
    page = response.content.decode()
    assert response.status_code == 200 and "Between 1 and 20" in page and "Between 0 and 0.5" in page
    bank.refresh_from_db()
    assert bank.top_k == 3


@pytest.mark.parametrize("who,status", [("reviewer", 403), ("viewer", 403), ("stranger", 404)])
def test_settings_and_archive_need_admin(as_, people, bank, who, status):
    url = bank_url(bank, "bank_settings")
    assert as_(people[who]).post(bank_url(bank, "bank_archive")).status_code == status
    assert as_(people[who]).post(url, _settings_post()).status_code == status
    bank.refresh_from_db()
    assert not bank.is_archived and bank.top_k == 3


def test_archive_and_unarchive_from_ui(as_, people, bank):
    url = reverse("accounts:bank_settings", kwargs={"bank_id": bank.public_id})
    client = as_(people["owner"])
    client.post(bank_url(bank, "bank_archive"))
    assert Bank.objects.get(pk=bank.pk).is_archived
    assert "bank_archived" in client.get(url).content.decode()
    client.post(bank_url(bank, "bank_unarchive"))
    assert not Bank.objects.get(pk=bank.pk).is_archived
