"""HTML views (session auth): account, teams and members, banks, tokens,
audit. Each view parses, calls one service, renders; each action of the team,
bank and token pages is its own POST-only view. Access checks go through
accounts.access (non-member → 404, role too low → 403)."""

from __future__ import annotations

import csv
import json
from functools import partial

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from accounts import email_verification, selectors, services
from accounts.access import bank_for_user, team_for_user
from accounts.forms import (
    AuditFilterForm,
    BankCreateForm,
    BankSettingsForm,
    InviteForm,
    RoleForm,
    SignupForm,
    TeamForm,
    TokenForm,
)
from accounts.models import ApiToken, Bank, Invitation, Membership, Role
from reasoningbank_site.errors import DomainError
from reasoningbank_site.security import int_or_404, no_store, safe_next_url
from reasoningbank_site.views_helpers import post_action

AUDIT_PAGE_SIZE = 50


def bank_home_url(bank: Bank) -> str:
    """Where picking a bank leads: its dashboard."""
    return reverse("trajectories:dashboard", kwargs={"bank_id": bank.public_id})


# --- Account --------------------------------------------------------------------


def home(request):
    if not request.user.is_authenticated:
        return redirect(f"{reverse('accounts:login')}?next=/")
    memberships = selectors.memberships_for_user(user=request.user)
    teams = [
        {
            "membership": m,
            "team": m.team,
            "banks": [{"bank": b, "url": bank_home_url(b)} for b in m.team.banks.all()],
            "can_admin": m.has_role(Role.ADMIN),
        }
        for m in memberships
    ]
    return render(request, "accounts/home.html", {"teams": teams})


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


# --- Teams and members ------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def team_create(request):
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = services.team_create(name=form.cleaned_data["name"], owner=request.user)
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Team '{team.name}' created. Create its first bank.")
            return redirect("accounts:bank_create", team_id=team.public_id)
    return render(request, "accounts/team_create.html", {"form": form})


def _team_page(request, team, me, *, invite_form=None):
    context = {
        "team": team,
        "me": me,
        "can_admin": me.has_role(Role.ADMIN),
        "is_owner": me.role == Role.OWNER,
        "members": selectors.team_members(team=team),
        "invitations": selectors.team_invitations(team=team),
        "banks": [{"bank": b, "url": bank_home_url(b)} for b in selectors.team_banks(team=team)],
        "invite_form": invite_form or InviteForm(),
        "roles": Role.choices,
        "role_choices_admin": [c for c in Role.choices if c[0] != Role.OWNER],
    }
    return render(request, "accounts/team_detail.html", context)


@login_required
@require_GET
def team_detail(request, team_id):
    team, me = team_for_user(request, team_id)
    return _team_page(request, team, me)


# --- the team page's actions: one POST-only view each; a refusal is a message on the team page


@login_required
@post_action
def team_invite(request, team_id):
    team, me = team_for_user(request, team_id, role=Role.ADMIN)
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            issued = services.invitation_create(
                team=team,
                email=form.cleaned_data["email"],
                role=form.cleaned_data["role"],
                actor=request.user,
                actor_membership=me,
                site_url=request.build_absolute_uri("/"),
                allow_any_email=form.cleaned_data["allow_any_email"],
            )
        except DomainError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Invitation emailed to {issued.invitation.email}.")
            return redirect("accounts:team", team_id=team.public_id)
    return _team_page(request, team, me, invite_form=form)


def _back_to_team(request, team, call, *, done: str):
    """Run a team action's service ``call`` (a ``partial``); its refusal or
    the ``done`` message is shown on the team page."""
    try:
        call()
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect("accounts:team", team_id=team.public_id)


@login_required
@post_action
def member_change_role(request, team_id):
    team, me = team_for_user(request, team_id, role=Role.ADMIN)
    membership = get_object_or_404(Membership, team=team, pk=int_or_404(request.POST.get("membership")))
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Pick a valid role.")
        return redirect("accounts:team", team_id=team.public_id)
    role = form.cleaned_data["role"]
    change = partial(
        services.membership_change_role, membership=membership, role=role, actor=request.user, actor_membership=me
    )
    done = f"{membership.user.get_username()} is now {Role(role).label.lower()}."
    return _back_to_team(request, team, change, done=done)


@login_required
@post_action
def member_remove(request, team_id):
    team, me = team_for_user(request, team_id, role=Role.ADMIN)
    membership = get_object_or_404(Membership, team=team, pk=int_or_404(request.POST.get("membership")))
    remove = partial(services.membership_remove, membership=membership, actor=request.user, actor_membership=me)
    return _back_to_team(request, team, remove, done=f"{membership.user.get_username()} was removed.")


@login_required
@post_action
def team_leave(request, team_id):
    team, me = team_for_user(request, team_id)
    try:
        services.membership_remove(membership=me, actor=request.user, actor_membership=me)
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect("accounts:team", team_id=team.public_id)
    messages.success(request, f"You left {team.name}.")
    return redirect("accounts:home")


@login_required
@post_action
def invitation_revoke(request, team_id, invitation_id):
    team, me = team_for_user(request, team_id, role=Role.ADMIN)
    invitation = get_object_or_404(Invitation, team=team, public_id=invitation_id)
    revoke = partial(services.invitation_revoke, invitation=invitation, actor=request.user, actor_membership=me)
    return _back_to_team(request, team, revoke, done=f"Invitation to {invitation.email} withdrawn.")


@require_http_methods(["GET", "POST"])
def invitation_accept(request, secret):
    try:
        invitation = services.invitation_check(secret=secret)
    except services.InvitationError as exc:
        status = 404 if exc.reason == "unknown" else 410
        return render(request, "accounts/invitation.html", {"error": str(exc), "reason": exc.reason}, status=status)
    if request.method == "POST":
        if not request.user.is_authenticated:
            return redirect(f"{reverse('accounts:login')}?next={request.path}")
        try:
            membership = services.invitation_accept(secret=secret, user=request.user)
        except services.InvitationError as exc:
            status = 403 if exc.reason == "wrong_email" else 410  # wrong account: not gone, just not yours
            return render(request, "accounts/invitation.html", {"error": str(exc), "reason": exc.reason}, status=status)
        messages.success(request, f"You joined {membership.team.name} as {membership.get_role_display().lower()}.")
        return redirect("accounts:team", team_id=membership.team.public_id)
    return render(request, "accounts/invitation.html", {"invitation": invitation})


# --- Banks ---------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def bank_create(request, team_id):
    team, _me = team_for_user(request, team_id, role=Role.ADMIN)
    form = BankCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            bank = services.bank_create(team=team, actor=request.user, **form.cleaned_data)
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
                services.bank_update_settings(bank=bank, actor=request.user, **form.cleaned_data)
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
    services.bank_archive(bank=bank, actor=request.user)
    messages.success(request, "Bank archived: its tokens now get 403 bank_archived.")
    return redirect("accounts:bank_settings", bank_id=bank.public_id)


@login_required
@post_action
def bank_unarchive(request, bank_id):
    bank, _me = bank_for_user(request, bank_id, role=Role.ADMIN)
    services.bank_unarchive(bank=bank, actor=request.user)
    messages.success(request, "Bank back in service.")
    return redirect("accounts:bank_settings", bank_id=bank.public_id)


def _tokens_page(request, bank, me, *, form=None, issued=None):
    """The tokens page; right after a creation (``issued``) it shows the
    secret once, with curl commands that use it."""
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
        context["curl_retrieve"] = _curl(
            api_base + "retrieve",
            issued.secret,
            {"query": "Find the cheapest flight from Berlin to Rome next Friday", "k": bank.top_k},
        )
        context["curl_trajectory"] = _curl(
            api_base + "trajectories",
            issued.secret,
            {
                "task": "Find the cheapest flight from Berlin to Rome next Friday",
                "steps": [
                    {"kind": "action", "content": "search_flights(origin=BER, destination=FCO, date=friday)"},
                    {"kind": "observation", "content": "3 results, cheapest 79 EUR"},
                ],
                "final_answer": "79 EUR with the 06:10 flight",
                "outcome": "success",
                "external_id": "run-0001",
            },
        )
    response = render(request, "accounts/bank_tokens.html", context)
    return no_store(response) if issued else response  # the secret is shown once: never cache it


@login_required
@require_GET
def bank_tokens(request, bank_id):
    bank, me = bank_for_user(request, bank_id)
    return _tokens_page(request, bank, me)


@login_required
@post_action
def token_create(request, bank_id):
    """Create a token and answer with the tokens page showing its secret (once)."""
    bank, me = bank_for_user(request, bank_id, role=Role.ADMIN)
    form = TokenForm(request.POST)
    if form.is_valid():
        try:
            issued = services.api_token_create(
                bank=bank,
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                expires_at=form.cleaned_data["expires_at"],
                created_by=request.user,
            )
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            return _tokens_page(request, bank, me, issued=issued)
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
    services.api_token_revoke(token=token, actor=request.user)
    messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("accounts:bank_tokens", bank_id=bank.public_id)


def _curl(url: str, secret: str, body: dict) -> str:
    payload = json.dumps(body, indent=2).replace("'", "'\\''")
    return (
        f"curl -sS -X POST {url} \\\n"
        f"  -H 'Authorization: Bearer {secret}' \\\n"
        f"  -H 'Content-Type: application/json' \\\n"
        f"  -d '{payload}'"
    )


# --- Audit ------------------------------------------------------------------------------


def _audit_filters(request) -> tuple[AuditFilterForm, selectors.AuditFilters]:
    form = AuditFilterForm(request.GET or None)
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        return form, selectors.AuditFilters(
            action=data["action"].strip(),
            actor=data["actor"].strip(),
            object=data["object"].strip(),
            since=data["since"],
            until=data["until"],
        )
    return form, selectors.AuditFilters()


def _audit_page(request, *, team, bank, template_context):
    form, filters = _audit_filters(request)
    events = selectors.audit_events(team=team, bank=bank, filters=filters)
    page = Paginator(events, AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        **template_context,
        "form": form,
        "page": page,
        "actions": selectors.audit_actions(team=team),
        "filters": filters,
    }
    return render(request, "accounts/audit.html", context)


@login_required
def bank_audit(request, bank_id):
    bank, _me = bank_for_user(request, bank_id)
    csv_url = reverse("accounts:bank_audit_csv", kwargs={"bank_id": bank.public_id})
    return _audit_page(
        request,
        team=bank.team,
        bank=bank,
        template_context={"bank": bank, "scope_label": bank.name, "csv_url": csv_url},
    )


@login_required
def team_audit(request, team_id):
    team, _me = team_for_user(request, team_id)
    csv_url = reverse("accounts:team_audit_csv", kwargs={"team_id": team.public_id})
    return _audit_page(
        request, team=team, bank=None, template_context={"team": team, "scope_label": team.name, "csv_url": csv_url}
    )


class _Echo:
    def write(self, value):
        return value


CSV_HEADER = ["time", "action", "actor_type", "actor", "bank", "object_type", "object_id", "object", "before", "after"]


def _csv_cell(value) -> str:
    # Spreadsheets execute cells that start with these; prefix so they stay text.
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv_rows(events):
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_HEADER)
    for e in events.iterator(chunk_size=500):
        actor_type = "user" if e.actor_user_id else ("token" if e.actor_token_id else "system")
        actor = e.actor_user.get_username() if e.actor_user_id else (e.actor_token.prefix if e.actor_token_id else "")
        yield writer.writerow(
            [
                _csv_cell(v)
                for v in (
                    e.created_at.isoformat(),
                    e.action,
                    actor_type,
                    actor,
                    e.bank.slug if e.bank_id else "",
                    e.object_type,
                    e.object_id,
                    e.object_repr,
                    json.dumps(e.before, default=str) if e.before is not None else "",
                    json.dumps(e.after, default=str) if e.after is not None else "",
                )
            ]
        )


def _csv_response(events, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_csv_rows(events), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
def bank_audit_csv(request, bank_id):
    bank, _me = bank_for_user(request, bank_id)
    _, filters = _audit_filters(request)
    return _csv_response(
        selectors.audit_events(team=bank.team, bank=bank, filters=filters), f"audit-{bank.team.slug}-{bank.slug}.csv"
    )


@login_required
def team_audit_csv(request, team_id):
    team, _me = team_for_user(request, team_id)
    _, filters = _audit_filters(request)
    return _csv_response(selectors.audit_events(team=team, filters=filters), f"audit-{team.slug}.csv")
