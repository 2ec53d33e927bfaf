"""A team's page, its members and invitations: creating a team, and the team page's
actions, one POST-only view each (a refusal is a message on the team page)."""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from accounts import errors
from accounts.access import team_for_user
from accounts.models import Invitation, Membership, Role
from accounts.shown_once import shown_once_keep, shown_once_take
from accounts.teams import invitations, selectors
from accounts.teams import services as team_services
from accounts.teams.account_views import bank_home_url
from accounts.teams.forms import InviteForm, RoleForm, TeamForm
from reasoningbank_site.errors import DomainError
from reasoningbank_site.security import int_or_404, no_store
from reasoningbank_site.views_helpers import post_action


@login_required
@require_http_methods(["GET", "POST"])
def team_create(request):
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = team_services.team_create(name=form.cleaned_data["name"], owner=request.user)
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Team '{team.name}' created. Create its first bank.")
            return redirect("accounts:bank_create", team_id=team.public_id)
    return render(request, "accounts/team_create.html", {"form": form})


def _invitation_link_key(team) -> str:
    return f"invitation-link:{team.public_id}"


def _team_page(request, team, me, *, invite_form=None, invitation_link=None):
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
        "invitation_link": invitation_link,
    }
    response = render(request, "accounts/team_detail.html", context)
    return no_store(response) if invitation_link else response  # the link is shown once: never cache it


@login_required
@require_GET
def team_detail(request, team_id):
    team, me = team_for_user(request, team_id)
    link = shown_once_take(request, key=_invitation_link_key(team)) if me.has_role(Role.ADMIN) else None
    return _team_page(request, team, me, invitation_link=link)


# --- the team page's actions: one POST-only view each; a refusal is a message on the team page


@login_required
@post_action
def team_invite(request, team_id):
    team, me = team_for_user(request, team_id, role=Role.ADMIN)
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            issued = invitations.invitation_create(
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
            if invitations.email_is_printed_only():
                # No mail leaves this server: the link is only in its log, so give it to the inviter to pass on.
                messages.warning(
                    request,
                    f"Invitation for {issued.invitation.email} created, but email is not set up (RB_EMAIL_BACKEND "
                    f"prints messages to the server's console): nothing was sent. Copy the link below and send it "
                    f"yourself.",
                )
                shown_once_keep(request, key=_invitation_link_key(team), value=issued.url)
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
        team_services.membership_change_role, membership=membership, role=role, actor=request.user, actor_membership=me
    )
    done = f"{membership.user.get_username()} is now {Role(role).label.lower()}."
    return _back_to_team(request, team, change, done=done)


@login_required
@post_action
def member_remove(request, team_id):
    team, me = team_for_user(request, team_id, role=Role.ADMIN)
    membership = get_object_or_404(Membership, team=team, pk=int_or_404(request.POST.get("membership")))
    remove = partial(team_services.membership_remove, membership=membership, actor=request.user, actor_membership=me)
    return _back_to_team(request, team, remove, done=f"{membership.user.get_username()} was removed.")


@login_required
@post_action
def team_leave(request, team_id):
    team, me = team_for_user(request, team_id)
    try:
        team_services.membership_remove(membership=me, actor=request.user, actor_membership=me)
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
    revoke = partial(invitations.invitation_revoke, invitation=invitation, actor=request.user, actor_membership=me)
    return _back_to_team(request, team, revoke, done=f"Invitation to {invitation.email} withdrawn.")


@require_http_methods(["GET", "POST"])
def invitation_accept(request, secret):
    try:
        invitation = invitations.invitation_check(secret=secret)
    except errors.InvitationError as exc:
        status = 404 if exc.reason == "unknown" else 410
        return render(request, "accounts/invitation.html", {"error": str(exc), "reason": exc.reason}, status=status)
    if request.method == "POST":
        if not request.user.is_authenticated:
            return redirect(f"{reverse('accounts:login')}?next={request.path}")
        try:
            membership = invitations.invitation_accept(secret=secret, user=request.user)
        except errors.InvitationError as exc:
            status = 403 if exc.reason == "wrong_email" else 410  # wrong account: not gone, just not yours
            return render(request, "accounts/invitation.html", {"error": str(exc), "reason": exc.reason}, status=status)
        messages.success(request, f"You joined {membership.team.name} as {membership.get_role_display().lower()}.")
        return redirect("accounts:team", team_id=membership.team.public_id)
    return render(request, "accounts/invitation.html", {"invitation": invitation})
