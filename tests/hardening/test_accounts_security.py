"""Login and password-reset throttling, invitations bound to the
invited address, unique signup emails, optional email verification."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.urls import reverse

from accounts.models import Membership, Role
from accounts.teams.services import team_create
from tests import factories

PASSWORD = "pw-for-tests-only"


def _login(client, url, username, password):
    return client.post(url, {"username": username, "password": password})


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_wrong_passwords_lock_the_login_even_for_the_right_one(client, db, settings, url):
    user = factories.make_user("victim")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = _login(client, url, "victim", "wrong")
        assert response.status_code in (200, 429)
    locked = _login(client, url, "victim", PASSWORD)
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_few_wrong_passwords_then_the_right_one_logs_in(client, db):
    factories.make_user("forgetful")
    for _ in range(2):
        assert _login(client, "/accounts/login/", "forgetful", "wrong").status_code == 200
    assert _login(client, "/accounts/login/", "forgetful", PASSWORD).status_code == 302
    assert "_auth_user_id" in client.session


def test_password_reset_mails_are_throttled_per_email(client, db, settings):
    user = factories.make_user("resetter")
    for _ in range(12):
        response = client.post(reverse("accounts:password_reset"), {"email": user.email})
        assert response.status_code == 302  # same answer either way: no enumeration
    assert len(mail.outbox) == settings.RB_PASSWORD_RESET_PER_EMAIL


def test_password_reset_is_throttled_per_ip(client, db, settings):
    settings.RB_PASSWORD_RESET_PER_IP = 4
    users = [factories.make_user() for _ in range(6)]
    for user in users:
        client.post(reverse("accounts:password_reset"), {"email": user.email})
    assert len(mail.outbox) == 4


def test_throttle_counts_live_in_the_shared_database_cache(settings):
    assert settings.CACHES["default"]["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"


# --- invitations ----------------------------------------------------------------------------------


def _invite(client, team, email, **extra):
    url = reverse("accounts:team_invite", kwargs={"team_id": team.public_id})
    response = client.post(url, {"email": email, "role": Role.REVIEWER, **extra})
    assert response.status_code == 302, response.content
    body = mail.outbox[-1].body
    return next(line.strip() for line in body.splitlines() if "/invitations/" in line).split("testserver", 1)[1]


@pytest.mark.django_db(transaction=True)
def test_invitation_accepted_by_another_address_is_refused_clearly(client):
    owner = factories.make_user("inv-owner")
    team = team_create(name="Bound", owner=owner)
    client.force_login(owner)
    link = _invite(client, team, "invited@example.com")
    intruder = factories.make_user("intruder")
    client.force_login(intruder)
    response = client.post(link)
    assert response.status_code == 403
    text = response.content.decode()
    assert "invited@example.com" in text and "another address" in text
    assert not Membership.objects.filter(team=team, user=intruder).exists()

    invited = factories.make_user("invited")
    invited.email = "Invited@Example.com"  # case does not matter
    invited.save(update_fields=["email"])
    client.force_login(invited)
    assert client.post(link).status_code == 302
    assert Membership.objects.get(team=team, user=invited).role == Role.REVIEWER


@pytest.mark.django_db(transaction=True)
def test_inviter_may_allow_any_address_explicitly(client):
    owner = factories.make_user("inv-owner2")
    team = team_create(name="Open", owner=owner)
    client.force_login(owner)
    link = _invite(client, team, "someone@example.com", allow_any_email="on")
    other = factories.make_user("other-address")
    client.force_login(other)
    page = client.get(link)
    assert "different address than the invited one" in page.content.decode()
    assert client.post(link).status_code == 302
    assert Membership.objects.filter(team=team, user=other).exists()


# --- signup ----------------------------------------------------------------------------------------


def _signup(client, username, email, **extra):
    data = {
        "username": username,
        "email": email,
        "password1": "a-long-Passphrase-42",
        "password2": "a-long-Passphrase-42",
    }
    return client.post(reverse("accounts:signup"), {**data, **extra})


def test_signup_email_must_be_unique_case_insensitively(client, db):
    factories.make_user("first")
    taken = get_user_model().objects.get(username="first").email
    response = _signup(client, "second", taken.upper())
    assert response.status_code == 200
    assert "exists already" in response.content.decode()
    assert not get_user_model().objects.filter(username="second").exists()


@pytest.mark.django_db(transaction=True)
def test_email_verification_when_required(client, settings):
    settings.RB_REQUIRE_EMAIL_VERIFICATION = True
    response = _signup(client, "verifyme", "verifyme@example.com")
    assert response.status_code == 200 and "Check your inbox" in response.content.decode()
    user = get_user_model().objects.get(username="verifyme")
    assert not user.is_active and "_auth_user_id" not in client.session
    assert _login(client, "/accounts/login/", "verifyme", "a-long-Passphrase-42").status_code == 200  # refused

    link = re.search(r"testserver(/accounts/verify/\S+)", mail.outbox[-1].body).group(1)
    assert client.get(link).status_code == 302
    user.refresh_from_db()
    assert user.is_active and client.session["_auth_user_id"] == str(user.pk)
    client.logout()
    assert client.get(link).status_code == 400  # once only


def test_email_verification_is_off_by_default(client, db, settings):
    assert settings.RB_REQUIRE_EMAIL_VERIFICATION is False
    assert _signup(client, "quick", "quick@example.com").status_code == 302
    assert get_user_model().objects.get(username="quick").is_active
