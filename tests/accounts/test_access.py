"""bank_for_user / team_for_user: the one access check of the HTML views —
not a member (or anonymous) is 404, never revealing the bank; a role too low
is 403 naming both roles; otherwise the bank with the user's membership."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.test import RequestFactory

from accounts.access import bank_for_user, team_for_user
from accounts.models import Role


def _request(user):
    request = RequestFactory().get("/")
    request.user = user
    return request


def test_a_member_gets_the_bank_and_their_membership_in_one_query(bank, reviewer, django_assert_max_num_queries):
    with django_assert_max_num_queries(1):
        found, membership = bank_for_user(_request(reviewer), bank.public_id, role=Role.REVIEWER)
        assert found == bank and found.team.name == bank.team.name  # the team came with it
    assert (membership.user_id, membership.team_id, membership.role) == (reviewer.pk, bank.team_id, Role.REVIEWER)
    membership.refresh_from_db()  # a real row, usable as any membership
    assert membership.role == Role.REVIEWER


def test_a_role_too_low_is_403_naming_both_roles(bank, viewer, team):
    with pytest.raises(PermissionDenied, match="needs the reviewer role; you are viewer"):
        bank_for_user(_request(viewer), bank.public_id, role=Role.REVIEWER)
    with pytest.raises(PermissionDenied, match="needs the admin role; you are viewer"):
        team_for_user(_request(viewer), team.public_id, role=Role.ADMIN)


def test_another_team_and_anonymous_get_404_for_the_bank_and_the_team(bank, team, stranger, other_bank):
    for user in (stranger, AnonymousUser()):
        with pytest.raises(Http404):
            bank_for_user(_request(user), bank.public_id)
        with pytest.raises(Http404):
            team_for_user(_request(user), team.public_id)
    # and their own bank is theirs
    assert bank_for_user(_request(stranger), other_bank.public_id)[0] == other_bank


def test_the_owner_passes_every_role(bank, team, owner):
    for role in Role.values:
        assert bank_for_user(_request(owner), bank.public_id, role=role)[1].role == Role.OWNER
        assert team_for_user(_request(owner), team.public_id, role=role)[0] == team
