"""Invitations: emailed once committed, used once, expiring, bound to their role. Against the real database."""

from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from accounts.errors import AccountsConflict, AccountsError, InvitationError
from accounts.models import Invitation, Membership, Role
from accounts.teams.invitations import invitation_accept, invitation_create
from tests import factories


def test_invitation_is_emailed_used_once_and_expires(team, owner, owner_m):
    issued = invitation_create(
        team=team,
        email="new@example.com",
        role=Role.REVIEWER,
        actor=owner,
        actor_membership=owner_m,
        site_url="http://testserver",
    )
    # The email goes out on commit; the test transaction never commits, so run the callbacks.
    assert issued.url.startswith("http://testserver/invitations/")
    assert issued.secret not in Invitation.objects.get().token_hash
    joiner = factories.make_user()
    joiner.email = "new@example.com"  # invitations are bound to the invited address
    joiner.save(update_fields=["email"])
    membership = invitation_accept(secret=issued.secret, user=joiner)
    assert membership.role == Role.REVIEWER and membership.team == team
    with pytest.raises(InvitationError) as used:
        invitation_accept(secret=issued.secret, user=factories.make_user())
    assert used.value.reason == "used"

    late = invitation_create(
        team=team, email="late@example.com", role=Role.VIEWER, actor=owner, actor_membership=owner_m
    )
    Invitation.objects.filter(pk=late.invitation.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(InvitationError) as expired:
        invitation_accept(secret=late.secret, user=factories.make_user())
    assert expired.value.reason == "expired"
    with pytest.raises(InvitationError) as unknown:
        invitation_accept(secret="nope", user=joiner)
    assert unknown.value.reason == "unknown"


def test_invitation_mail_sent_on_commit(team, owner, owner_m, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        issued = invitation_create(
            team=team,
            email="mail@example.com",
            role=Role.VIEWER,
            actor=owner,
            actor_membership=owner_m,
            site_url="http://h",
        )
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["mail@example.com"]
    assert issued.url in mail.outbox[0].body


def test_only_owners_invite_owners(team):
    admin = factories.make_member(team, Role.ADMIN)
    admin_m = Membership.objects.get(team=team, user=admin)
    with pytest.raises(AccountsError, match="Only owners invite owners"):
        invitation_create(team=team, email="x@example.com", role=Role.OWNER, actor=admin, actor_membership=admin_m)


def test_invitation_never_downgrades_an_existing_member(team, owner, owner_m):
    admin = factories.make_member(team, Role.ADMIN)
    # An invitation to a member's own address is refused up front; one any account may accept can still reach them.
    with pytest.raises(AccountsConflict, match="already a member"):
        invitation_create(team=team, email=admin.email, role=Role.VIEWER, actor=owner, actor_membership=owner_m)
    issued = invitation_create(
        team=team,
        email="shared@example.com",
        role=Role.VIEWER,
        actor=owner,
        actor_membership=owner_m,
        allow_any_email=True,
    )
    assert invitation_accept(secret=issued.secret, user=admin).role == Role.ADMIN
