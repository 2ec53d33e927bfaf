"""Invitations: a one-time, expiring emailed link to join a team, its use
and its withdrawal. Whether a link is usable is the model's ``state``."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from accounts.audit.actions import AuditAction
from accounts.audit.services import audit_record
from accounts.errors import AccountsConflict, AccountsForbidden, AccountsInvalid, InvitationError
from accounts.models import ROLE_RANK, Invitation, InvitationState, Membership, Role, Team
from accounts.teams.services import require_known_role, require_member_manager
from accounts.tokens.auth import hash_token

# Why a link in each unusable state cannot be used: (message, InvitationError.reason).
_REFUSALS = {
    InvitationState.ACCEPTED: ("This invitation link was already used. Ask the team's admin for a new one.", "used"),
    InvitationState.REVOKED: ("This invitation was withdrawn. Ask the team's admin for a new one.", "revoked"),
    InvitationState.EXPIRED: ("This invitation link has expired. Ask the team's admin for a new one.", "expired"),
}


@dataclass(frozen=True)
class IssuedInvitation:
    invitation: Invitation
    secret: str  # in the emailed link only; never stored
    url: str


def invitation_ttl() -> timedelta:
    return timedelta(hours=getattr(settings, "RB_INVITATION_TTL_HOURS", 72))


@transaction.atomic
def invitation_create(
    *,
    team: Team,
    email: str,
    role: str,
    actor,
    actor_membership: Membership,
    site_url: str = "",
    allow_any_email: bool = False,
) -> IssuedInvitation:
    """Invite ``email`` into ``team`` with ``role`` and email them a one-time
    link that expires after RB_INVITATION_TTL_HOURS. ``site_url`` (scheme and
    host) makes the link absolute. Only admins+ invite; only owners invite
    owners. Only an account with ``email`` may accept it unless
    ``allow_any_email``. Raises AccountsInvalid for a bad role or email, AccountsForbidden
    when the actor's role does not allow it, AccountsConflict when an account with
    that email is already a member of ``team``."""
    email = email.strip()
    if not email or "@" not in email:
        raise AccountsInvalid("Give an email address to invite.")
    require_known_role(role)
    require_member_manager(actor_membership)
    if role == Role.OWNER and actor_membership.role != Role.OWNER:
        raise AccountsForbidden("Only owners invite owners.")
    member = team.memberships.filter(user__email__iexact=email).select_related("user").first()
    if member is not None:
        raise AccountsConflict(
            f"{email} is already a member of {team.name} ({member.user.get_username()}, {member.get_role_display()}): "
            "change their role in the members list instead."
        )
    secret = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        team=team,
        email=email,
        role=role,
        token_hash=hash_token(secret),
        invited_by=actor,
        expires_at=timezone.now() + invitation_ttl(),
        allow_any_email=allow_any_email,
    )
    url = site_url.rstrip("/") + reverse("accounts:invitation_accept", kwargs={"secret": secret})
    audit_record(
        action=AuditAction.INVITATION_CREATE,
        team=team,
        user=actor,
        obj=invitation,
        after={"email": email, "role": role, "allow_any_email": allow_any_email},
    )
    inviter = actor.get_username()
    hours = int(invitation_ttl().total_seconds() // 3600)
    context = {"inviter": inviter, "team": team, "role_label": Role(role).label.lower(), "hours": hours, "url": url}
    # A header cannot hold a line break: a name with CR/LF becomes one line.
    subject = " ".join(render_to_string("accounts/email/invitation_subject.txt", context).split())
    body = render_to_string("accounts/email/invitation_body.txt", context)
    transaction.on_commit(lambda: send_mail(subject=subject, message=body, from_email=None, recipient_list=[email]))
    return IssuedInvitation(invitation=invitation, secret=secret, url=url)


def invitations_pending_for(*, user) -> list[Invitation]:
    """The pending invitations addressed to ``user``'s email, to teams they are not in yet (newest first)."""
    if not getattr(user, "email", ""):
        return []
    return list(
        Invitation.objects.pending()
        .filter(email__iexact=user.email)
        .exclude(team__memberships__user=user)
        .select_related("team", "invited_by")
        .order_by("-created_at")
    )


def email_is_printed_only() -> bool:
    """Whether mail goes nowhere a person reads it (the console or dummy backend): then an
    invitation's link is only in the server's log, and the inviter must be told so."""
    return settings.EMAIL_BACKEND in (
        "django.core.mail.backends.console.EmailBackend",
        "django.core.mail.backends.dummy.EmailBackend",
    )


def _usable(invitation: Invitation | None) -> Invitation:
    if invitation is None:
        raise InvitationError("This invitation link is not valid. Ask for a new one.", "unknown")
    state = invitation.state
    if state != InvitationState.PENDING:
        message, reason = _REFUSALS[state]
        raise InvitationError(message, reason)
    return invitation


def invitation_check(*, secret: str) -> Invitation:
    """The pending invitation for a link secret. Raises InvitationError with
    reason unknown / used / revoked / expired."""
    invitation = (
        Invitation.objects.select_related("team", "invited_by").filter(token_hash=hash_token(secret or "")).first()
    )
    return _usable(invitation)


@transaction.atomic
def invitation_accept(*, secret: str, user) -> Membership:
    """Use an invitation link once: ``user`` joins the team with the invited
    role. ``user``'s email must be the invited one (case-insensitive) unless
    the inviter allowed any address. Someone already a member keeps their
    role if it is higher. Raises InvitationError (unknown, used, revoked,
    expired, wrong_email)."""
    invitation = _usable(
        Invitation.objects.select_for_update()
        .select_related("team")
        .filter(token_hash=hash_token(secret or ""))
        .first()
    )
    invitation_check_email(invitation=invitation, user=user)
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    membership, created = Membership.objects.select_for_update().get_or_create(
        team=invitation.team, user=user, defaults={"role": invitation.role}
    )
    before = None if created else {"role": membership.role}
    if not created and ROLE_RANK[Role(invitation.role)] > ROLE_RANK[Role(membership.role)]:
        membership.role = invitation.role
        membership.save(update_fields=["role"])
    audit_record(
        action=AuditAction.INVITATION_ACCEPT,
        team=invitation.team,
        user=user,
        obj=invitation,
        before=before,
        after={"user": user.get_username(), "role": membership.role, "email": invitation.email},
    )
    return membership


def invitation_check_email(*, invitation: Invitation, user) -> None:
    """Raise InvitationError(wrong_email) when ``user`` may not accept
    ``invitation``: it is bound to another address and the inviter did not allow any."""
    if invitation.allow_any_email:
        return
    if (user.email or "").strip().lower() != invitation.email.strip().lower():
        raise InvitationError(
            f"This invitation was sent to {invitation.email}, but you are logged in as "
            f"{user.get_username()} ({user.email or 'no email'}). Log in with the account of that "
            "address, or ask the team's admin to invite this account's address.",
            "wrong_email",
        )


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor, actor_membership: Membership) -> Invitation:
    """Withdraw an invitation not yet used or withdrawn (admins+). Idempotent.
    Raises AccountsForbidden for a viewer or reviewer."""
    require_member_manager(actor_membership)
    if invitation.state in (InvitationState.PENDING, InvitationState.EXPIRED):
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        audit_record(
            action=AuditAction.INVITATION_REVOKE,
            team=invitation.team,
            user=actor,
            obj=invitation,
            before={"email": invitation.email},
        )
    return invitation
