"""Team pages: creating a team, members and their roles, leaving, and invitations."""

from datetime import timedelta

import pytest
from django.core import mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from accounts.models import Invitation, Membership, Role, Team
from accounts.teams.services import team_create
from tests import factories
from tests.accounts.views import team_url


def test_team_create_makes_owner(as_, people):
    client = as_(people["stranger"])
    response = client.post(reverse("accounts:team_create"), {"name": "New Crew"})
    team = Team.objects.get(name="New Crew")
    assert response.status_code == 302 and Membership.objects.get(team=team, user=people["stranger"]).role == Role.OWNER


@pytest.mark.parametrize(
    "who,status", [("owner", 200), ("admin", 200), ("reviewer", 200), ("viewer", 200), ("stranger", 404)]
)
def test_team_page_access(as_, people, team, who, status):
    assert as_(people[who]).get(reverse("accounts:team", kwargs={"team_id": team.public_id})).status_code == status


def test_team_page_anonymous_redirects(client, team):
    url = reverse("accounts:team", kwargs={"team_id": team.public_id})
    response = client.get(url)
    assert response.status_code == 302 and reverse("accounts:login") in response["Location"]


@pytest.mark.parametrize("who,status", [("reviewer", 403), ("viewer", 403), ("stranger", 404)])
def test_members_managed_by_admins_only(as_, people, team, who, status):
    url = team_url(team, "member_change_role")
    target = Membership.objects.get(team=team, user=people["viewer"])
    response = as_(people[who]).post(url, {"membership": target.pk, "role": "admin"})
    assert response.status_code == status
    assert Membership.objects.get(pk=target.pk).role == Role.VIEWER


def test_admin_changes_role_and_removes_member(as_, people, team):
    client = as_(people["admin"])
    viewer_m = Membership.objects.get(team=team, user=people["viewer"])
    role, remove = team_url(team, "member_change_role"), team_url(team, "member_remove")
    assert client.post(role, {"membership": viewer_m.pk, "role": "reviewer"}).status_code == 302
    assert Membership.objects.get(pk=viewer_m.pk).role == Role.REVIEWER
    assert client.post(remove, {"membership": viewer_m.pk}).status_code == 302
    assert not Membership.objects.filter(pk=viewer_m.pk).exists()


def test_admin_cannot_make_owner_error_is_shown(as_, people, team):
    url = team_url(team, "member_change_role")
    client = as_(people["admin"])
    viewer_m = Membership.objects.get(team=team, user=people["viewer"])
    page = client.post(url, {"membership": viewer_m.pk, "role": "owner"}, follow=True)
    assert "Only owners make owners" in page.content.decode()
    assert Membership.objects.get(pk=viewer_m.pk).role == Role.VIEWER


def test_last_owner_cannot_leave_error_is_shown(as_, people, team):
    page = as_(people["owner"]).post(team_url(team, "team_leave"), follow=True)
    assert "last owner cannot leave" in page.content.decode()
    assert Membership.objects.filter(team=team, user=people["owner"], role=Role.OWNER).exists()
    page = as_(people["owner"]).post(
        team_url(team, "member_change_role"),
        {"membership": Membership.objects.get(team=team, user=people["owner"]).pk, "role": "admin"},
        follow=True,
    )
    assert "last owner cannot be demoted" in page.content.decode()


def test_membership_of_another_team_is_404(as_, people, team, other_bank):
    other_m = Membership.objects.filter(team=other_bank.team).first()
    url = team_url(team, "member_remove")
    assert as_(people["owner"]).post(url, {"membership": other_m.pk}).status_code == 404
    assert Membership.objects.filter(pk=other_m.pk).exists()


def _invite(client, team, email="new@example.com", role="reviewer"):
    with_commit = client.post(team_url(team, "team_invite"), {"email": email, "role": role})
    assert with_commit.status_code == 302, with_commit.content
    body = mail.outbox[-1].body
    return next(line.strip() for line in body.splitlines() if "/invitations/" in line).split("testserver", 1)[1]


@pytest.mark.django_db(transaction=True)
def test_invitation_flow_signup_accept_once(client):
    owner = factories.make_user("own")
    team = team_create(name="Crew", owner=owner)
    client.force_login(owner)
    link = _invite(client, team)
    client.logout()

    page = client.get(link)
    assert page.status_code == 200 and "Sign up to accept" in page.content.decode()
    assert client.post(link).status_code == 302  # anonymous → login
    joiner = factories.make_user("joiner")
    joiner.email = "new@example.com"  # invitations are bound to the invited address
    joiner.save(update_fields=["email"])
    client.force_login(joiner)
    response = client.post(link)
    assert response.status_code == 302
    assert Membership.objects.get(team=team, user=joiner).role == Role.REVIEWER

    again = client.get(link)
    assert again.status_code == 410 and "already used" in again.content.decode()
    client.force_login(factories.make_user())
    assert client.post(link).status_code == 410


@pytest.mark.django_db(transaction=True)
def test_expired_invitation_shows_clear_page(client):
    owner = factories.make_user("own2")
    team = team_create(name="Crew2", owner=owner)
    client.force_login(owner)
    link = _invite(client, team, role="viewer")
    Invitation.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    client.force_login(factories.make_user())
    page = client.get(link)
    assert page.status_code == 410 and "expired" in page.content.decode()
    assert client.post(link).status_code == 410
    assert Membership.objects.filter(team=team).count() == 1


def test_unknown_invitation_is_404(client, db):
    assert client.get(reverse("accounts:invitation_accept", kwargs={"secret": "nope"})).status_code == 404


def test_invitation_email_is_rendered_from_templates():
    """templates/accounts/email/: the subject (one line) and the body with the
    link on a line of its own, unescaped, as invitation_create sends them."""
    context = {
        "inviter": "o'neil",
        "team": Team(name="R&D <crew>"),
        "role_label": "reviewer",
        "hours": 72,
        "url": "http://testserver/invitations/abc/",
    }
    assert render_to_string("accounts/email/invitation_subject.txt", context) == (
        "o'neil invited you to R&D <crew> on ReasoningBank"
    )
    assert render_to_string("accounts/email/invitation_body.txt", context) == (
        "o'neil invited you to join the team 'R&D <crew>' as reviewer.\n\n"
        "Accept within 72 hours (the link works once):\nhttp://testserver/invitations/abc/\n\n"
        "If you did not expect this, ignore this email."
    )


def test_viewer_cannot_invite(as_, people, team):
    url = team_url(team, "team_invite")
    assert as_(people["viewer"]).post(url, {"email": "x@example.com", "role": "viewer"}).status_code == 403
    assert not Invitation.objects.exists()
