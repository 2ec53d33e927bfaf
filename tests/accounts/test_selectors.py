"""Reads of accounts against the real database: a token secret finds only a
live token, a bank is found by slug or team/slug, and the audit log narrows
by action, actor, object and inclusive days."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.audit.services import audit_record
from accounts.models import ApiToken, AuditEvent, Bank
from accounts.teams.banks import bank_archive, bank_unarchive
from accounts.teams.selectors import AuditFilters, audit_actions, audit_events, bank_find
from accounts.tokens.auth import api_token_for_secret
from accounts.tokens.services import api_token_revoke
from tests import factories

pytestmark = pytest.mark.django_db


def test_a_secret_finds_its_live_token_with_bank_and_team_in_one_query(bank, django_assert_num_queries):
    secret = factories.make_token(bank)
    with django_assert_num_queries(1):
        token = api_token_for_secret(raw=secret)
        assert token.bank == bank and token.bank.team.slug == bank.team.slug


def test_unknown_malformed_revoked_and_expired_secrets_find_nothing(bank, owner, django_assert_num_queries):
    with django_assert_num_queries(0):  # what cannot be a secret costs no query
        assert api_token_for_secret(raw="") is None
        assert api_token_for_secret(raw="not-our-prefix") is None
        assert api_token_for_secret(raw="rb_" + "x" * 300) is None
    assert api_token_for_secret(raw="rb_" + "x" * 43) is None
    revoked = factories.make_token(bank)
    api_token_revoke(token=api_token_for_secret(raw=revoked), actor=owner)
    assert api_token_for_secret(raw=revoked) is None
    expiring = factories.make_token(bank, expires_at=timezone.now() + timedelta(days=1))
    ApiToken.objects.filter(prefix=expiring[:12]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api_token_for_secret(raw=expiring) is None


def test_a_bank_is_found_by_slug_or_by_team_and_slug(bank, team):
    assert bank_find(ref="web-agents") == bank
    assert bank_find(ref=f"{team.slug}/web-agents") == bank
    factories.make_bank(slug="web-agents")  # the same slug in another team
    with pytest.raises(Bank.MultipleObjectsReturned):
        bank_find(ref="web-agents")
    assert bank_find(ref=f"{team.slug}/web-agents") == bank
    with pytest.raises(Bank.DoesNotExist):
        bank_find(ref=f"{team.slug}/no-such-bank")


def test_the_audit_log_narrows_by_action_actor_object_and_days(bank, team, owner, reviewer):
    bank_archive(bank=bank, actor=owner)
    bank_unarchive(bank=bank, actor=reviewer)
    audit_record(action="memory_item.approve", bank=bank, user=reviewer, object_repr="Prefer the source")
    old = audit_record(action="memory_item.reject", bank=bank, user=owner, object_repr="Old lesson")
    AuditEvent.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=10))

    def actions(**filters) -> list[str]:
        return [e.action for e in audit_events(team=team, filters=AuditFilters(**filters))]

    everything = actions()
    assert everything[-1] == "memory_item.reject"  # newest first: the back-dated one is last
    assert set(actions(action="memory_item")) == {"memory_item.approve", "memory_item.reject"}
    assert actions(action="memory_item.approve") == ["memory_item.approve"]
    assert "memory_item.approve" in actions(actor=reviewer.username.upper())
    assert "memory_item.reject" not in actions(actor=reviewer.username)
    assert actions(object="prefer the") == ["memory_item.approve"]
    today = timezone.localdate()
    assert "memory_item.reject" not in actions(since=today)
    assert actions(until=today - timedelta(days=9)) == ["memory_item.reject"]
    assert actions(since=today - timedelta(days=10), until=today - timedelta(days=10)) == ["memory_item.reject"]
    assert set(audit_actions(team=team)) == set(everything)
    other = factories.make_bank(team=team)
    assert list(audit_events(team=team, bank=other)) == [e for e in audit_events(team=team) if e.bank == other]
