"""team_create, membership_change_role and membership_remove: owners are never left without one. Against the real database."""

import pytest

from accounts.errors import AccountsError
from accounts.models import AuditEvent, Membership, Role
from accounts.teams.services import membership_change_role, membership_remove, team_create
from tests import factories


def test_team_create_makes_creator_owner_and_audits(db):
    user = factories.make_user()
    team = team_create(name="Research Lab", owner=user)
    assert team.slug == "research-lab"
    assert Membership.objects.get(team=team, user=user).role == Role.OWNER
    assert list(AuditEvent.objects.filter(team=team).values_list("action", flat=True).order_by("id")) == [
        "team.create",
        "membership.add",
    ]
    # A second team of the same name gets its own slug.
    assert team_create(name="Research Lab", owner=user).slug == "research-lab-2"


def test_last_owner_cannot_be_demoted_or_leave(team, owner, owner_m):
    with pytest.raises(AccountsError, match="last owner"):
        membership_change_role(membership=owner_m, role=Role.ADMIN, actor=owner, actor_membership=owner_m)
    with pytest.raises(AccountsError, match="last owner"):
        membership_remove(membership=owner_m, actor=owner, actor_membership=owner_m)
    assert Membership.objects.get(pk=owner_m.pk).role == Role.OWNER


def test_second_owner_allows_demotion_and_leaving(team, owner, owner_m):
    other = factories.make_member(team, Role.ADMIN)
    other_m = Membership.objects.get(team=team, user=other)
    membership_change_role(membership=other_m, role=Role.OWNER, actor=owner, actor_membership=owner_m)
    membership_change_role(membership=owner_m, role=Role.VIEWER, actor=owner, actor_membership=owner_m)
    assert Membership.objects.get(pk=owner_m.pk).role == Role.VIEWER
    event = AuditEvent.objects.filter(action="membership.change_role").first()
    assert event.before == {"user": owner.username, "role": "owner"}
    assert event.after == {"user": owner.username, "role": "viewer"}


def test_only_owners_make_owners_and_admins_cannot_touch_owners(team, owner):
    admin = factories.make_member(team, Role.ADMIN)
    admin_m = Membership.objects.get(team=team, user=admin)
    viewer = factories.make_member(team, Role.VIEWER)
    viewer_m = Membership.objects.get(team=team, user=viewer)
    with pytest.raises(AccountsError, match="Only owners"):
        membership_change_role(membership=viewer_m, role=Role.OWNER, actor=admin, actor_membership=admin_m)
    owner_m = Membership.objects.get(team=team, user=owner)
    with pytest.raises(AccountsError, match="Only owners"):
        membership_remove(membership=owner_m, actor=admin, actor_membership=admin_m)
    # Admins do manage lower roles.
    membership_change_role(membership=viewer_m, role=Role.REVIEWER, actor=admin, actor_membership=admin_m)
    assert Membership.objects.get(pk=viewer_m.pk).role == Role.REVIEWER
    # Viewers manage nobody, but may leave.
    with pytest.raises(AccountsError, match="admins"):
        membership_remove(membership=admin_m, actor=viewer, actor_membership=Membership.objects.get(pk=viewer_m.pk))
    membership_remove(membership=viewer_m, actor=viewer, actor_membership=viewer_m)
    assert not Membership.objects.filter(pk=viewer_m.pk).exists()
    assert AuditEvent.objects.filter(action="membership.leave", team=team).count() == 1
