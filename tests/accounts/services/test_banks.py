"""A bank's settings, archive and unarchive, audited. Against the real database."""

import pytest

from accounts.errors import AccountsError
from accounts.models import AuditEvent, Bank
from accounts.teams.banks import bank_archive, bank_unarchive, bank_update_settings


def test_bank_settings_update_audits_only_changed_fields(bank, owner):
    bank_update_settings(bank=bank, actor=owner, top_k=5, min_similarity=bank.min_similarity, holdout_fraction=0.1)
    bank.refresh_from_db()
    assert (bank.top_k, bank.holdout_fraction) == (5, 0.1)
    event = AuditEvent.objects.get(action="bank.update_settings")
    assert event.before == {"top_k": 3, "holdout_fraction": 0.0}
    assert event.after == {"top_k": 5, "holdout_fraction": 0.1}
    assert event.actor_user == owner and event.bank == bank


@pytest.mark.parametrize(
    "values",
    [
        {"top_k": 0},
        {"top_k": 21},
        {"holdout_fraction": 1.5},
        {"min_similarity": 2},
        {"retrieval_mode": "nope"},
        {"slug_typo": 1},
        {"rate_limit_per_minute": -1},
    ],
)
def test_bank_settings_reject_bad_values(bank, owner, values):
    with pytest.raises(AccountsError):
        bank_update_settings(bank=bank, actor=owner, **values)


def test_bank_archive_roundtrip_is_idempotent_and_audited(bank, owner):
    bank_archive(bank=bank, actor=owner)
    bank_archive(bank=bank, actor=owner)
    assert Bank.objects.get(pk=bank.pk).is_archived
    bank_unarchive(bank=bank, actor=owner)
    assert not Bank.objects.get(pk=bank.pk).is_archived
    assert list(AuditEvent.objects.filter(bank=bank).values_list("action", flat=True).order_by("id")) == [
        "bank.create",
        "bank.archive",
        "bank.unarchive",
    ]
