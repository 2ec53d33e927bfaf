"""Email verification's services: a signup is stored inactive and mailed a
one-time link once committed; the link activates exactly its account, once,
and any malformed or forged link is simply invalid (never an error)."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts.teams.email_verification import user_signup_unverified, user_verify_email
from accounts.teams.forms import SignupForm
from tests import factories

pytestmark = pytest.mark.django_db

LINK = re.compile(r"https://rb\.example/accounts/verify/(?P<uid>[^/]+)/(?P<token>[^/\s]+)/")


def _signup(django_capture_on_commit_callbacks, mailoutbox):
    form = SignupForm(
        data={
            "username": "newcomer",
            "email": "newcomer@example.com",
            "password1": "a-long-Passphrase-42",
            "password2": "a-long-Passphrase-42",
        }
    )
    assert form.is_valid(), form.errors
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        user = user_signup_unverified(form=form, site_url="https://rb.example/")
    assert mailoutbox == []  # nothing is mailed before the account is committed
    for callback in callbacks:
        callback()
    return user


def test_a_signup_is_inactive_and_mailed_its_link_after_commit(django_capture_on_commit_callbacks, mailoutbox):
    user = _signup(django_capture_on_commit_callbacks, mailoutbox)
    assert not get_user_model().objects.get(pk=user.pk).is_active
    [message] = mailoutbox
    assert message.to == ["newcomer@example.com"]
    assert LINK.search(message.body), message.body


def test_the_link_activates_its_account_once(django_capture_on_commit_callbacks, mailoutbox):
    user = _signup(django_capture_on_commit_callbacks, mailoutbox)
    link = LINK.search(mailoutbox[0].body)
    assert user_verify_email(uidb64=link["uid"], token=link["token"]) == user
    assert get_user_model().objects.get(pk=user.pk).is_active
    assert user_verify_email(uidb64=link["uid"], token=link["token"]) is None  # used


@pytest.mark.parametrize("uid", ["", "!!!", "bm90LWEtbnVtYmVy", urlsafe_base64_encode(force_bytes(10**30))])
def test_a_malformed_link_is_invalid(uid):
    assert user_verify_email(uidb64=uid, token="whatever") is None


def test_a_token_for_another_account_or_an_active_one_is_invalid(django_capture_on_commit_callbacks, mailoutbox):
    user = _signup(django_capture_on_commit_callbacks, mailoutbox)
    other = factories.make_user()
    other.is_active = False
    other.save()
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    assert user_verify_email(uidb64=uid, token=default_token_generator.make_token(other)) is None
    active = factories.make_user()
    uid = urlsafe_base64_encode(force_bytes(active.pk))
    assert user_verify_email(uidb64=uid, token=default_token_generator.make_token(active)) is None
    assert not get_user_model().objects.get(pk=user.pk).is_active
