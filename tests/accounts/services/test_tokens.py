"""API tokens: created and revoked with an audit entry. Against the real database."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from accounts.tokens.services import api_token_create, api_token_revoke
from reasoningbank_site.errors import Invalid


def test_token_create_and_revoke_are_audited(bank, owner):
    issued = api_token_create(bank=bank, name="agent", scopes=["retrieve"], created_by=owner)
    api_token_revoke(token=issued.token, actor=owner)
    api_token_revoke(token=issued.token, actor=owner)
    created, revoked = AuditEvent.objects.filter(bank=bank, action__startswith="token.").order_by("id")
    assert created.action == "token.create" and created.after["prefix"] == issued.token.prefix
    assert issued.secret not in str(created.after)
    assert revoked.action == "token.revoke" and revoked.actor_user == owner
    with pytest.raises(Invalid):
        api_token_create(bank=bank, name="old", scopes=["retrieve"], expires_at=timezone.now() - timedelta(days=1))
