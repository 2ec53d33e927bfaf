"""What the inviter and the invited read: where the link is when email only
goes to the console, "already a member" rather than "emailed" for a member,
and the pending invitation on the invited user's home page."""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import override_settings

from accounts.models import Invitation
from accounts.teams.invitations import invitation_create
from accounts.teams.services import team_create
from tests import factories
from tests.accounts.views import team_url


@pytest.fixture
def crew(db):
    owner = factories.make_user("crew-owner")
    return owner, team_create(name="Crew", owner=owner)


@override_settings(EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend")
def test_with_the_console_backend_the_inviter_is_told_nothing_was_sent_and_gets_the_link(client, crew):
    owner, team = crew
    client.force_login(owner)
    page = client.post(team_url(team, "team_invite"), {"email": "new@example.com", "role": "reviewer"}, follow=True)
    html = page.content.decode()
    assert "Invitation emailed" not in html
    assert "email is not set up" in html and "nothing was sent" in html
    assert "/invitations/" in html  # the link itself, to pass on
    assert Invitation.objects.filter(team=team, email="new@example.com").exists()


def test_with_real_mail_it_says_emailed(client, crew):
    owner, team = crew
    client.force_login(owner)
    page = client.post(team_url(team, "team_invite"), {"email": "new@example.com", "role": "reviewer"}, follow=True)
    assert "Invitation emailed to new@example.com." in page.content.decode()


def test_inviting_a_member_again_says_already_a_member_and_sends_nothing(client, crew):
    owner, team = crew
    member = factories.make_user("already")
    member.email = "Already@Example.com"
    member.save(update_fields=["email"])
    factories.make_member(team, "reviewer", user=member)
    client.force_login(owner)
    sent = len(mail.outbox)
    page = client.post(team_url(team, "team_invite"), {"email": "already@example.com", "role": "viewer"}, follow=True)
    html = page.content.decode()
    assert "already@example.com is already a member of Crew" in html
    assert "emailed" not in html
    assert len(mail.outbox) == sent and not Invitation.objects.filter(team=team).exists()


def test_the_invited_users_home_page_mentions_the_pending_invitation(client, crew):
    owner, team = crew
    invitation_create(
        team=team, email="joiner@example.com", role="reviewer", actor=owner, actor_membership=team.memberships.get()
    )
    joiner = factories.make_user("joiner")
    joiner.email = "joiner@example.com"
    joiner.save(update_fields=["email"])
    client.force_login(joiner)
    html = client.get("/").content.decode()
    assert "Invitations waiting for you" in html and "<strong>Crew</strong> invited you as reviewer" in html
    other = factories.make_user("someone-else")
    client.force_login(other)
    assert "Invitations waiting for you" not in client.get("/").content.decode()


@override_settings(EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend")
def test_the_printed_only_invitation_link_is_shown_once_with_a_copy_button_not_in_the_message(client, crew):
    owner, team = crew
    client.force_login(owner)
    page = client.post(team_url(team, "team_invite"), {"email": "new@example.com", "role": "reviewer"}, follow=True)
    html = page.content.decode()
    link = page.context["invitation_link"]
    assert "/invitations/" in link and f'<code id="invitation-link" class="secret">{link}</code>' in html
    assert 'data-copy="invitation-link"' in html and "no-store" in page["Cache-Control"]
    assert html.count(link) == 1  # in the copy row only, not in the flash message too
    assert all(link not in str(m) for m in page.context["messages"])
    again = client.get(team_url(team, "team"))  # a reload: the link is gone
    assert link not in again.content.decode() and 'data-copy="invitation-link"' not in again.content.decode()
