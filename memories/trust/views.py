"""The bank's trust page: its trust policy (serving tier, safe
auto-approval, abuse limits: the LLM budget with its cost, the agent API's
rate limit and ingest quota), the policy's record with the audit sample's
disagreement rate beside it, the sample to audit (a disagreement asks for
confirmation), the history of disagreements, every auto-approved item, the
items its topic gate kept for a human, those waiting for corroboration, and
the bulk undo."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.access import bank_for_user
from accounts.models import Role
from memories.review.policy_forms import TrustPolicyForm, UndoSinceForm
from memories.trust.anomaly.reads import bank_anomaly_status
from memories.trust.auto_approval import (
    audit_sample_pending,
    auto_approval_disagreements,
    auto_approval_held_back,
    auto_approval_stats,
    auto_approvals_page,
)
from memories.trust.corroboration import corroboration_waiting
from memories.trust.models import AutoApproval
from memories.trust.selectors import bank_trust_policy
from memories.trust.services import auto_approval_audit, auto_approvals_undo, bank_trust_policy_update
from reasoningbank_site.errors import DomainError
from reasoningbank_site.text import counted
from reasoningbank_site.views_helpers import post_action
from trajectories.dashboard.llm_usage import llm_budget_day


def _page(request, bank, membership, form=None, undo_form=None, confirming=None):
    policy = bank_trust_policy(bank=bank)
    llm_day = llm_budget_day(bank=bank, budget=policy.daily_llm_token_budget)
    context = {
        "bank": bank,
        "membership": membership,
        "can_admin": membership.has_role(Role.ADMIN),
        "can_write": membership.has_role(Role.REVIEWER),
        "form": form or TrustPolicyForm(instance=policy),
        "undo_form": undo_form or UndoSinceForm(),
        "policy": policy,
        "llm_day": llm_day,
        "anomaly": bank_anomaly_status(bank=bank),
        "tokens_today": llm_day.today.tokens,
        "stats": auto_approval_stats(bank=bank),
        "sample": audit_sample_pending(bank=bank),
        "held_back": auto_approval_held_back(bank=bank),
        "waiting": corroboration_waiting(bank=bank),
        "disagreements": auto_approval_disagreements(bank=bank),
        "approvals": auto_approvals_page(bank=bank, page=request.GET.get("page")),
        "confirming": confirming,
    }
    return render(request, "memories/trust.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def trust(request, bank_id):
    """GET: the trust policy and its record. POST (admins): change the policy."""
    bank, membership = bank_for_user(request, bank_id, role=Role.ADMIN if request.method == "POST" else Role.VIEWER)
    if request.method == "GET":
        return _page(request, bank, membership)
    form = TrustPolicyForm(request.POST, instance=bank_trust_policy(bank=bank))
    if form.is_valid():
        try:
            bank_trust_policy_update(bank=bank, actor=request.user, **form.values())
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Trust policy saved.")
            return redirect("memories:trust", bank_id=bank.public_id)
    return _page(request, bank, membership, form=form)


@login_required
@post_action
def trust_audit(request, bank_id, item_id):
    """A reviewer's answer on the auto-approval of one item of the audit sample (agree=1 or 0). A
    disagreement sends the item back to review, so without confirm=1 it answers the page with a
    confirmation instead."""
    bank, membership = bank_for_user(request, bank_id, role=Role.REVIEWER)
    approval = (
        AutoApproval.objects.filter(bank=bank, item__public_id=item_id, sampled=True)
        .select_related("item")
        .order_by("-id")
        .first()
    )
    if approval is None:
        raise Http404("No auto-approval of this item in the audit sample.")
    agree = request.POST.get("agree") == "1"
    if not agree and request.POST.get("confirm") != "1":
        return _page(request, bank, membership, confirming=approval)
    try:
        auto_approval_audit(approval=approval, author=request.user, agree=agree)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        title = approval.item.title
        messages.success(request, f"Agreed with “{title}”." if agree else f"“{title}” sent back to review.")
    return redirect("memories:trust", bank_id=bank.public_id)


@login_required
@post_action
def trust_undo(request, bank_id):
    """Admins: send the policy's approvals since a moment back to review."""
    bank, membership = bank_for_user(request, bank_id, role=Role.ADMIN)
    form = UndoSinceForm(request.POST)
    if not form.is_valid():
        return _page(request, bank, membership, undo_form=form)
    n = auto_approvals_undo(bank=bank, since=form.cleaned_data["since"], author=request.user)
    messages.success(request, f"{counted(n, 'auto-approved item')} sent back to review.")
    return redirect("memories:trust", bank_id=bank.public_id)
