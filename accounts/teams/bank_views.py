"""Creating a bank, its settings, archiving it and bringing it back."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user, team_for_user
from accounts.models import Bank, Role
from accounts.teams import banks
from accounts.teams.forms import BankCreateForm, BankSettingsForm
from reasoningbank_site.errors import DomainError
from reasoningbank_site.views_helpers import post_action


@login_required
@require_http_methods(["GET", "POST"])
def bank_create(request, team_id):
    team, _me = team_for_user(request, team_id, role=Role.ADMIN)
    form = BankCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            bank = banks.bank_create(team=team, actor=request.user, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Bank '{bank.name}' created. Create a token so an agent can use it.")
            return redirect("accounts:bank_tokens", bank_id=bank.public_id)
    return render(request, "accounts/bank_create.html", {"form": form, "team": team})


@login_required
@require_http_methods(["GET", "POST"])
def bank_settings(request, bank_id):
    """GET: the settings (read-only below admin). POST: save them (admins)."""
    bank, me = bank_for_user(request, bank_id)
    can_admin = me.has_role(Role.ADMIN)
    form = BankSettingsForm(instance=bank)
    if request.method == "POST":
        if not can_admin:
            raise PermissionDenied("Only admins and owners change a bank's settings.")
        form = BankSettingsForm(request.POST, instance=Bank.objects.get(pk=bank.pk))
        if form.is_valid():
            try:
                banks.bank_update_settings(bank=bank, actor=request.user, **form.cleaned_data)
            except DomainError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Settings saved.")
                return redirect("accounts:bank_settings", bank_id=bank.public_id)
    if not can_admin:
        for field in form.fields.values():
            field.disabled = True
    return render(
        request, "accounts/bank_settings.html", {"bank": bank, "form": form, "can_admin": can_admin, "me": me}
    )


@login_required
@post_action
def bank_archive(request, bank_id):
    bank, _me = bank_for_user(request, bank_id, role=Role.ADMIN)
    banks.bank_archive(bank=bank, actor=request.user)
    messages.success(request, "Bank archived: its tokens now get 403 bank_archived.")
    return redirect("accounts:bank_settings", bank_id=bank.public_id)


@login_required
@post_action
def bank_unarchive(request, bank_id):
    bank, _me = bank_for_user(request, bank_id, role=Role.ADMIN)
    banks.bank_unarchive(bank=bank, actor=request.user)
    messages.success(request, "Bank back in service.")
    return redirect("accounts:bank_settings", bank_id=bank.public_id)
