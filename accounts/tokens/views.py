"""A bank's API tokens: the list, creating one (its secret shown once, with curl
commands that use it) and revoking one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from accounts.access import bank_for_user
from accounts.models import ApiToken, Role
from accounts.shown_once import shown_once_keep, shown_once_take
from accounts.teams import selectors
from accounts.teams.forms import TokenForm
from accounts.tokens.examples import is_agent_token, token_examples
from accounts.tokens.services import IssuedToken, api_token_create, api_token_revoke
from reasoningbank_site.errors import DomainError
from reasoningbank_site.security import no_store
from reasoningbank_site.views_helpers import post_action


def _tokens_page(request, bank, me, *, form=None, issued=None):
    """The tokens page; right after a creation (``issued``) it shows the
    secret once, with curl commands for the scopes it was granted."""
    api_base = request.build_absolute_uri("/api/v1/")
    context = {
        "bank": bank,
        "me": me,
        "can_admin": me.has_role(Role.ADMIN),
        "form": form or TokenForm(),
        "issued": issued,
        "tokens": selectors.bank_tokens(bank=bank),
        "api_base": api_base,
        "now": timezone.now(),
    }
    if issued:
        context["examples"] = [
            (example, example.curl(api_base=api_base, secret=issued.secret))
            for example in token_examples(bank=bank, scopes=issued.token.scopes)
        ]
        context["agent_token"] = is_agent_token(issued.token.scopes)
    response = render(request, "accounts/bank_tokens.html", context)
    return no_store(response) if issued else response  # the secret is shown once: never cache it


def _secret_key(bank) -> str:
    return f"token-secret:{bank.public_id}"


@login_required
@require_GET
def bank_tokens(request, bank_id):
    """The list; right after a creation, the new token's secret (once)."""
    bank, me = bank_for_user(request, bank_id)
    kept = shown_once_take(request, key=_secret_key(bank)) if me.has_role(Role.ADMIN) else None
    token = ApiToken.objects.filter(bank=bank, public_id=kept["token"]).first() if kept else None
    issued = IssuedToken(token=token, secret=kept["secret"]) if token else None
    return _tokens_page(request, bank, me, issued=issued)


@login_required
@post_action
def token_create(request, bank_id):
    """Create a token and redirect to the tokens page, which shows its secret (once)."""
    bank, me = bank_for_user(request, bank_id, role=Role.ADMIN)
    form = TokenForm(request.POST)
    if form.is_valid():
        try:
            issued = api_token_create(
                bank=bank,
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                expires_at=form.cleaned_data["expires_at"],
                created_by=request.user,
            )
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            kept = {"token": str(issued.token.public_id), "secret": issued.secret}
            shown_once_keep(request, key=_secret_key(bank), value=kept)
            return redirect("accounts:bank_tokens", bank_id=bank.public_id)
    return _tokens_page(request, bank, me, form=form)


@login_required
@post_action
def token_revoke(request, bank_id, token_id):
    """Revoke a token (admins and owners). A POST without ``confirm=1``
    answers the confirmation page (agents using it get 401 at once after);
    with it, revokes and goes back to the tokens page."""
    bank, me = bank_for_user(request, bank_id, role=Role.ADMIN)
    token = get_object_or_404(ApiToken, bank=bank, public_id=token_id)
    if request.POST.get("confirm") != "1" and token.revoked_at is None:
        context = {"bank": bank, "membership": me, "token": token}
        return render(request, "accounts/token_revoke_confirm.html", context)
    api_token_revoke(token=token, actor=request.user)
    messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("accounts:bank_tokens", bank_id=bank.public_id)
