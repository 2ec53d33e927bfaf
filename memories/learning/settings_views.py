"""A bank's learning policy page: read by every member, changed by admins."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.learning.policy import bank_learning_update
from memories.learning.selectors import bank_learning
from memories.review.policy_forms import BankLearningForm
from reasoningbank_site.errors import DomainError


@login_required
@require_http_methods(["GET", "POST"])
def bank_learning_settings(request, bank_id):
    """GET: the policy (read-only below admin). POST: save it (admins)."""
    bank, me = bank_for_user(request, bank_id)
    can_admin = me.has_role(Role.ADMIN)
    form = BankLearningForm(instance=bank_learning(bank=bank))
    if request.method == "POST":
        if not can_admin:
            raise PermissionDenied("Only admins and owners change a bank's learning settings.")
        form = BankLearningForm(request.POST, instance=bank_learning(bank=bank))
        if form.is_valid():
            try:
                bank_learning_update(bank=bank, actor=request.user, **form.cleaned_data)
            except DomainError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Learning settings saved.")
                return redirect("memories:bank_learning", bank_id=bank.public_id)
    if not can_admin:
        for field in form.fields.values():
            field.disabled = True
    context = {"bank": bank, "form": form, "can_admin": can_admin}
    return render(request, "memories/learning_settings.html", context)
