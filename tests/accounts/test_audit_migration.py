"""The upgrade that gives audit actions one vocabulary renames the events
written under the older names in place, so the audit page's filter finds the
whole history, and folds the second event an auto-approval used to write into
the first; downgrading gives the old names back."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from accounts.models import AuditEvent

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("accounts", "0013_webhook_attempt_private_target")]
VOCABULARY = [("accounts", "0014_audit_action_vocabulary")]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)


def _forward():
    """Up through the vocabulary, then every app to its latest (going back unapplied what depends on it)."""
    _migrate(VOCABULARY)
    call_command("migrate", verbosity=0)


def _old_event(bank, action, **fields) -> AuditEvent:
    # Written as the code before the registry did (audit_record refuses these names now).
    return AuditEvent.objects.create(team=bank.team, bank=bank, action=action, **fields)


def test_old_action_names_are_renamed_and_the_filter_finds_them(bank, owner, client):
    _migrate(BEFORE)
    try:
        published = _old_event(bank, "release.published", after={"production": 1})
        approved = _old_event(bank, "memory_item.approved", object_id="item-1")
        version = _old_event(
            bank, "memory_item.auto-approved", object_id="item-2", after={"status": "approved", "note": "policy"}
        )
        extra = _old_event(
            bank, "memory_item.auto_approve", object_id="item-2", after={"policy": "trust_policy", "tier": 1}
        )
        untouched = _old_event(bank, "token.create")
    finally:
        _forward()
    actions = dict(AuditEvent.objects.filter(bank=bank).values_list("pk", "action"))
    assert actions[published.pk] == "release.publish" and actions[approved.pk] == "memory_item.approve"
    assert actions[version.pk] == "memory_item.auto_approve" and actions[untouched.pk] == "token.create"
    assert extra.pk not in actions  # one auto-approval, one event
    assert "verdict of the judge met" in AuditEvent.objects.get(pk=version.pk).after["note"]
    client.force_login(owner)
    url = reverse("accounts:bank_audit", kwargs={"bank_id": bank.public_id})
    found = client.get(url, {"action": "release.publish"}).context["page"].object_list
    assert [e.pk for e in found] == [published.pk]
    assert {e.pk for e in client.get(url, {"action": "memory_item"}).context["page"].object_list} == {
        approved.pk,
        version.pk,
    }


def test_downgrading_gives_the_old_names_back(bank):
    event = AuditEvent.objects.create(team=bank.team, bank=bank, action="release.roll_back")
    try:
        _migrate(BEFORE)
        assert AuditEvent.objects.get(pk=event.pk).action == "release.rolled_back"
    finally:
        _forward()
    assert AuditEvent.objects.get(pk=event.pk).action == "release.roll_back"
