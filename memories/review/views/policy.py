"""A bank's review policy page: the reviewers' guidelines (markdown) and the
independent decisions each item needs. Everyone on the bank reads it; admins edit."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.review.guidelines import guidelines_html
from memories.review.policy import review_policy_get, review_policy_update
from memories.review.policy_forms import ReviewPolicyForm
from memories.review.policy_models import Distribution
from memories.review.seats import seat_summary, team_voters
from reasoningbank_site.errors import DomainError


@login_required
@require_http_methods(["GET", "POST"])
def review_policy(request, bank_id):
    role = Role.ADMIN if request.method == "POST" else Role.VIEWER
    bank, membership = bank_for_user(request, bank_id, role=role)
    policy = review_policy_get(bank=bank)
    initial = {name: getattr(policy, name) for name in ("guidelines", "decisions_required", "distribution")}
    if not policy.seated:  # with one decision only Open is accepted (a policy saved before may say otherwise)
        initial["distribution"] = Distribution.OPEN
    form = ReviewPolicyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            review_policy_update(bank=bank, actor=request.user, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Review policy saved.")
            return redirect("memories:review_policy", bank_id=bank.public_id)
    context = {
        "bank": bank,
        "membership": membership,
        "can_admin": membership.has_role(Role.ADMIN),
        "policy": policy,
        "guidelines": guidelines_html(policy.guidelines),
        "distribution": seat_summary(policy=policy, voters=len(team_voters(bank=bank))),
        "form": form,
    }
    return render(request, "memories/review_policy.html", context)
