"""The account pages: home (the teams and banks of the signed-in user, with
what waits in each bank and the next step) and signup."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from accounts.models import Bank, Role
from accounts.teams import email_verification, invitations, selectors
from accounts.teams.bank_work import banks_work
from accounts.teams.forms import SignupForm
from reasoningbank_site.security import safe_next_url


def bank_home_url(bank: Bank) -> str:
    """Where picking a bank leads: its dashboard."""
    return reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})


def home(request):
    if not request.user.is_authenticated:
        return redirect(f"{reverse('accounts:login')}?next=/")
    memberships = selectors.memberships_for_user(user=request.user)
    # What waits in each live bank for a reviewer or more; a viewer decides nothing, so nothing waits for them.
    deciding = [b for m in memberships if m.has_role(Role.REVIEWER) for b in m.team.banks.all() if not b.is_archived]
    work = banks_work(banks=deciding, user=request.user)
    teams = [
        {
            "membership": m,
            "team": m.team,
            "banks": [{"bank": b, "url": bank_home_url(b), "work": work.get(b.pk)} for b in m.team.banks.all()],
            "can_admin": m.has_role(Role.ADMIN),
        }
        for m in memberships
    ]
    pending = invitations.invitations_pending_for(user=request.user)
    return render(request, "accounts/home.html", {"teams": teams, "invitations": pending})


@require_http_methods(["GET", "POST"])
def signup(request):
    next_url = safe_next_url(request, reverse("accounts:home"))
    if request.user.is_authenticated:
        return redirect(next_url)
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if settings.RB_REQUIRE_EMAIL_VERIFICATION:  # inactive until the mailed link is followed
            return email_verification.signup_pending(request, form=form, next_url=next_url)
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.get_username()}.")
        return redirect(next_url)
    return render(request, "registration/signup.html", {"form": form, "next": next_url})
