"""Optional email verification at signup (RB_REQUIRE_EMAIL_VERIFICATION=1).

The account is created inactive and a one-time link is mailed to its
address; following it activates the account and logs it in. The link is
Django's password-reset token (HMAC of the user's state, expires after
PASSWORD_RESET_TIMEOUT), so nothing is stored and a used link stops working
once the account is active and has logged in."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.db import transaction
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode
from django.views.decorators.http import require_GET


@transaction.atomic
def user_signup_unverified(*, form, site_url: str) -> object:
    """Create the account of a valid signup ``form`` inactive and mail its
    address a verification link (sent after commit)."""
    user = form.save(commit=False)
    user.is_active = False
    user.save()
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    url = site_url.rstrip("/") + reverse("accounts:verify_email", kwargs={"uidb64": uid, "token": token})
    address = user.email
    transaction.on_commit(
        lambda: send_mail(
            subject="Confirm your email address for ReasoningBank",
            message=f"Follow this link to activate your account:\n{url}\n\nIf you did not sign up, ignore this email.",
            from_email=None,
            recipient_list=[address],
        )
    )
    return user


def user_verify_email(*, uidb64: str, token: str):
    """The user the link is for, now active; None when the link is invalid or used."""
    try:
        pk = int(urlsafe_base64_decode(uidb64).decode())
        user = get_user_model().objects.get(pk=pk)
    except (ValueError, TypeError, OverflowError, get_user_model().DoesNotExist):
        return None
    if user.is_active or not default_token_generator.check_token(user, token):
        return None
    user.is_active = True
    user.save(update_fields=["is_active"])
    return user


def signup_pending(request, *, form, next_url: str):
    """The signup view's branch when verification is required."""
    user = user_signup_unverified(form=form, site_url=request.build_absolute_uri("/"))
    return render(request, "registration/verify_email_sent.html", {"email": user.email, "next": next_url})


@require_GET
def verify_email(request, uidb64: str, token: str):
    user = user_verify_email(uidb64=uidb64, token=token)
    if user is None:
        return render(request, "registration/verify_email_invalid.html", status=400)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    messages.success(request, f"Email confirmed. Welcome, {user.get_username()}.")
    return redirect("accounts:home")
