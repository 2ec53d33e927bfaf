"""Signing up, logging in and out, password reset, and the home page."""

from django.core import mail
from django.urls import reverse

from tests import factories


def test_signup_logs_in_and_home_lists_teams(client, db):
    response = client.post(
        reverse("accounts:signup"),
        {
            "username": "ada",
            "email": "ada@example.com",
            "password1": "a-long-Passphrase-42",
            "password2": "a-long-Passphrase-42",
        },
    )
    assert response.status_code == 302
    home = client.get("/")
    assert home.status_code == 200 and "not in a team yet" in home.content.decode()


def test_anonymous_home_goes_to_login(client, db):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith(reverse("accounts:login"))


def test_login_logout(client, db):
    factories.make_user("bob", password="pw-for-tests-only")
    assert client.get(reverse("accounts:login")).status_code == 200
    response = client.post(reverse("accounts:login"), {"username": "bob", "password": "pw-for-tests-only"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.post(reverse("accounts:logout")).status_code == 302
    assert client.get("/").status_code == 302


def test_password_reset_sends_a_working_link(client, db):
    user = factories.make_user("carol")
    response = client.post(reverse("accounts:password_reset"), {"email": user.email})
    assert response.status_code == 302
    assert len(mail.outbox) == 1
    link = next(line for line in mail.outbox[0].body.splitlines() if "/accounts/reset/" in line)
    path = link.split("testserver", 1)[1]
    confirm = client.get(path, follow=True)
    assert confirm.status_code == 200 and "Choose a new password" in confirm.content.decode()
    done = client.post(
        confirm.redirect_chain[-1][0], {"new_password1": "Fresh-pass-9876", "new_password2": "Fresh-pass-9876"}
    )
    assert done.status_code == 302
    user.refresh_from_db()
    assert user.check_password("Fresh-pass-9876")


def test_home_shows_only_own_teams_and_links_banks(as_, people, bank, other_bank):
    html = as_(people["viewer"]).get("/").content.decode()
    assert bank.name in html and other_bank.name not in html and other_bank.team.name not in html
