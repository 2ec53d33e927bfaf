"""Writes for teams, memberships, invitations, banks, tokens, rate limits and
the audit log. Every change a human (or token) makes here is recorded with
``audit_record``, which other apps' services call too."""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify

from accounts.models import (
    MAX_TOP_K,
    ROLE_RANK,
    ApiToken,
    AuditEvent,
    Bank,
    Invitation,
    Membership,
    RetrievalMode,
    Role,
    Scope,
    Team,
)
from reasoningbank_site.text import one_line

TOKEN_PREFIX = "rb_"


class AccountsError(Exception):
    """A rule of teams, banks or tokens was broken; the message is meant for
    the person who tried (the UI shows it as is)."""


class InvitationError(AccountsError):
    """The invitation link cannot be used. ``reason`` is one of unknown,
    expired, used, revoked, wrong_email."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


# --- Audit --------------------------------------------------------------------


def _object_identity(obj) -> tuple[str, str, str]:
    if obj is None:
        return "", "", ""
    object_type = obj._meta.model_name
    object_id = str(getattr(obj, "public_id", None) or obj.pk)
    return object_type, object_id, str(obj)[:200]


def audit_record(
    *,
    action: str,
    team: Team | None = None,
    bank: Bank | None = None,
    user=None,
    token: ApiToken | None = None,
    obj=None,
    before: dict | None = None,
    after: dict | None = None,
) -> AuditEvent:
    """Append one audit event. ``action`` is a dotted verb such as
    ``memory_item.approve``; ``team`` may be left out when ``bank`` is given.
    ``obj`` is any model instance (its ``public_id``, else pk, is recorded).
    ``before``/``after`` are JSON-serializable snapshots (datetimes, UUIDs and
    decimals are fine). Anonymous users are recorded as no actor. Raises
    ValueError if neither team nor bank is given. Joins the caller's
    transaction, so an event exists only if the change it describes does."""
    if team is None:
        if bank is None:
            raise ValueError("audit_record needs a team or a bank")
        team = bank.team
    if user is not None and not getattr(user, "is_authenticated", False):
        user = None
    object_type, object_id, object_repr = _object_identity(obj)
    return AuditEvent.objects.create(
        team=team,
        bank=bank,
        actor_user=user,
        actor_token=token,
        action=action,
        object_type=object_type,
        object_id=object_id,
        object_repr=object_repr,
        before=before,
        after=after,
    )


def snapshot(obj, fields: list[str]) -> dict[str, Any]:
    """The named fields of ``obj`` as a dict for ``audit_record``."""
    return {name: getattr(obj, name) for name in fields}


# --- Teams and memberships -------------------------------------------------------


def _unique_slug(base: str, taken) -> str:
    base = (slugify(base) or "x")[:50]
    slug, n = base, 2
    while taken(slug):
        slug, n = f"{base}-{n}", n + 1
    return slug


@transaction.atomic
def team_create(*, name: str, owner, slug: str = "") -> Team:
    """Create a team with ``owner`` as its first owner. An empty ``slug`` is
    derived from the name (made unique). Raises AccountsError for an empty
    name or a slug already taken."""
    name = name.strip()
    if not name:
        raise AccountsError("A team needs a name.")
    if slug:
        if Team.objects.filter(slug=slug).exists():
            raise AccountsError(f"The team slug '{slug}' is taken.")
    else:
        slug = _unique_slug(name, lambda s: Team.objects.filter(slug=s).exists())
    team = Team.objects.create(name=name, slug=slug)
    membership = Membership.objects.create(team=team, user=owner, role=Role.OWNER)
    audit_record(action="team.create", team=team, user=owner, obj=team, after={"name": name, "slug": slug})
    audit_record(
        action="membership.add",
        team=team,
        user=owner,
        obj=membership,
        after={"user": owner.get_username(), "role": Role.OWNER},
    )
    return team


def _lock_owners(team: Team) -> int:
    """Lock the team's owner rows and count them, so two concurrent demotions
    cannot both pass the last-owner check."""
    return len(
        list(Membership.objects.select_for_update().filter(team=team, role=Role.OWNER).values_list("pk", flat=True))
    )


def _require_manager(actor_membership: Membership) -> None:
    if not actor_membership.has_role(Role.ADMIN):
        raise AccountsError("Only admins and owners manage members.")


@transaction.atomic
def membership_change_role(*, membership: Membership, role: str, actor, actor_membership: Membership) -> Membership:
    """Give ``membership`` a new role. Rules: only admins+ manage members;
    only owners grant the owner role or change an owner's role; the last
    owner cannot be demoted. Raises AccountsError when a rule forbids it."""
    if role not in Role.values:
        raise AccountsError(f"Unknown role '{role}'.")
    _require_manager(actor_membership)
    membership = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
    if (role == Role.OWNER or membership.role == Role.OWNER) and actor_membership.role != Role.OWNER:
        raise AccountsError("Only owners make owners or change an owner's role.")
    if membership.role == role:
        return membership
    if membership.role == Role.OWNER and _lock_owners(membership.team) <= 1:
        raise AccountsError("The last owner cannot be demoted: make someone else an owner first.")
    before = {"user": membership.user.get_username(), "role": membership.role}
    membership.role = role
    membership.save(update_fields=["role"])
    audit_record(
        action="membership.change_role",
        team=membership.team,
        user=actor,
        obj=membership,
        before=before,
        after={"user": membership.user.get_username(), "role": role},
    )
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor, actor_membership: Membership) -> None:
    """Remove a member (or let one leave: ``actor`` is the member). Others
    are removed by admins+; owners only by owners; the last owner can neither
    leave nor be removed. Raises AccountsError when a rule forbids it."""
    membership = Membership.objects.select_for_update().select_related("user", "team").get(pk=membership.pk)
    leaving = membership.user_id == actor.pk
    if not leaving:
        _require_manager(actor_membership)
        if membership.role == Role.OWNER and actor_membership.role != Role.OWNER:
            raise AccountsError("Only owners remove an owner.")
    if membership.role == Role.OWNER and _lock_owners(membership.team) <= 1:
        raise AccountsError("The last owner cannot leave or be removed: make someone else an owner first.")
    before = {"user": membership.user.get_username(), "role": membership.role}
    audit_record(
        action="membership.leave" if leaving else "membership.remove",
        team=membership.team,
        user=actor,
        obj=membership,
        before=before,
    )
    membership.delete()


# --- Invitations -----------------------------------------------------------------


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
    ``allow_any_email``. Raises AccountsError for those rules or a bad role/email."""
    email = email.strip()
    if not email or "@" not in email:
        raise AccountsError("Give an email address to invite.")
    if role not in Role.values:
        raise AccountsError(f"Unknown role '{role}'.")
    _require_manager(actor_membership)
    if role == Role.OWNER and actor_membership.role != Role.OWNER:
        raise AccountsError("Only owners invite owners.")
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
        action="invitation.create",
        team=team,
        user=actor,
        obj=invitation,
        after={"email": email, "role": role, "allow_any_email": allow_any_email},
    )
    inviter = actor.get_username()
    hours = int(invitation_ttl().total_seconds() // 3600)
    transaction.on_commit(
        lambda: send_mail(
            subject=one_line(f"{inviter} invited you to {team.name} on ReasoningBank"),  # CR/LF: BadHeaderError
            message=(
                f"{inviter} invited you to join the team '{team.name}' as {Role(role).label.lower()}.\n\n"
                f"Accept within {hours} hours (the link works once):\n{url}\n\n"
                "If you did not expect this, ignore this email."
            ),
            from_email=None,
            recipient_list=[email],
        )
    )
    return IssuedInvitation(invitation=invitation, secret=secret, url=url)


def invitation_check(*, secret: str) -> Invitation:
    """The pending invitation for a link secret. Raises InvitationError with
    reason unknown / used / revoked / expired."""
    invitation = (
        Invitation.objects.select_related("team", "invited_by").filter(token_hash=hash_token(secret or "")).first()
    )
    return _usable(invitation)


def _usable(invitation: Invitation | None) -> Invitation:
    if invitation is None:
        raise InvitationError("This invitation link is not valid. Ask for a new one.", "unknown")
    if invitation.accepted_at:
        raise InvitationError("This invitation link was already used. Ask the team's admin for a new one.", "used")
    if invitation.revoked_at:
        raise InvitationError("This invitation was withdrawn. Ask the team's admin for a new one.", "revoked")
    if invitation.expires_at <= timezone.now():
        raise InvitationError("This invitation link has expired. Ask the team's admin for a new one.", "expired")
    return invitation


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
        action="invitation.accept",
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
    """Withdraw a pending invitation (admins+). Idempotent."""
    _require_manager(actor_membership)
    if invitation.revoked_at is None and invitation.accepted_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        audit_record(
            action="invitation.revoke",
            team=invitation.team,
            user=actor,
            obj=invitation,
            before={"email": invitation.email},
        )
    return invitation


# --- Banks -------------------------------------------------------------------------

BANK_SETTINGS = [
    "name",
    "description",
    "retrieval_mode",
    "top_k",
    "min_similarity",
    "trust_agent_outcome",
    "reward_threshold",
    "judge_model",
    "distill_model",
    "holdout_fraction",
    "rate_limit_per_minute",
]


def _validate_bank_settings(values: dict) -> None:
    unknown = set(values) - set(BANK_SETTINGS) - {"slug"}
    if unknown:
        raise AccountsError(f"Unknown bank settings: {', '.join(sorted(unknown))}.")
    checks = {
        "top_k": lambda v: 1 <= int(v) <= MAX_TOP_K,
        "min_similarity": lambda v: -1.0 <= float(v) <= 1.0,
        "holdout_fraction": lambda v: 0.0 <= float(v) <= 1.0,
        "reward_threshold": lambda v: math.isfinite(float(v)),
        "retrieval_mode": lambda v: v in RetrievalMode.values,
        "rate_limit_per_minute": lambda v: 0 <= int(v) <= 1_000_000,
    }
    messages = {
        "top_k": f"k must be between 1 and {MAX_TOP_K}.",
        "min_similarity": "The minimum similarity must be between -1 and 1.",
        "holdout_fraction": "The holdout fraction must be between 0 and 1.",
        "reward_threshold": "The reward threshold must be a number.",
        "retrieval_mode": "Unknown retrieval mode.",
        "rate_limit_per_minute": "The rate limit must be between 0 (no limit) and 1,000,000 per minute.",
    }
    for key, check in checks.items():
        if key in values:
            try:
                ok = check(values[key])
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise AccountsError(messages[key])
    if "name" in values and not str(values["name"]).strip():
        raise AccountsError("A bank needs a name.")


@transaction.atomic
def bank_create(*, team: Team, name: str, slug: str = "", actor=None, **settings_) -> Bank:
    """Create a bank in ``team`` with optional settings (field names of Bank,
    see BANK_SETTINGS). An empty slug is derived from the name. Raises
    AccountsError for invalid settings or a slug the team already uses."""
    _validate_bank_settings({"name": name, **settings_})
    if slug:
        if Bank.objects.filter(team=team, slug=slug).exists():
            raise AccountsError(f"This team already has a bank '{slug}'.")
    else:
        slug = _unique_slug(name, lambda s: Bank.objects.filter(team=team, slug=s).exists())
    bank = Bank.objects.create(team=team, name=name.strip(), slug=slug, **settings_)
    audit_record(
        action="bank.create",
        team=team,
        bank=bank,
        user=actor,
        obj=bank,
        after={"slug": slug, **snapshot(bank, BANK_SETTINGS)},
    )
    return bank


@transaction.atomic
def bank_update_settings(*, bank: Bank, actor, **values) -> Bank:
    """Change some of a bank's settings (keys from BANK_SETTINGS) and audit
    exactly the fields that changed. Raises AccountsError for invalid values."""
    _validate_bank_settings(values)
    bank = Bank.objects.select_for_update().select_related("team").get(pk=bank.pk)
    changed = [key for key, value in values.items() if getattr(bank, key) != value]
    if not changed:
        return bank
    before = snapshot(bank, changed)
    for key in changed:
        setattr(bank, key, values[key])
    bank.save(update_fields=[*changed, "updated_at"])
    audit_record(
        action="bank.update_settings", bank=bank, user=actor, obj=bank, before=before, after=snapshot(bank, changed)
    )
    return bank


@transaction.atomic
def bank_archive(*, bank: Bank, actor) -> Bank:
    """Archive a bank: its tokens then get 403 ``bank_archived`` — it serves
    nothing and accepts nothing. Idempotent."""
    bank = Bank.objects.select_for_update().select_related("team").get(pk=bank.pk)
    if bank.archived_at is None:
        bank.archived_at = timezone.now()
        bank.save(update_fields=["archived_at", "updated_at"])
        audit_record(
            action="bank.archive",
            bank=bank,
            user=actor,
            obj=bank,
            before={"archived_at": None},
            after={"archived_at": bank.archived_at},
        )
    return bank


@transaction.atomic
def bank_unarchive(*, bank: Bank, actor) -> Bank:
    """Bring an archived bank back into service. Idempotent."""
    bank = Bank.objects.select_for_update().select_related("team").get(pk=bank.pk)
    if bank.archived_at is not None:
        before = {"archived_at": bank.archived_at}
        bank.archived_at = None
        bank.save(update_fields=["archived_at", "updated_at"])
        audit_record(
            action="bank.unarchive", bank=bank, user=actor, obj=bank, before=before, after={"archived_at": None}
        )
    return bank


# --- API tokens ----------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # shown once; never stored


@transaction.atomic
def api_token_create(
    *, bank: Bank, name: str, scopes: list[str], created_by=None, expires_at: datetime | None = None
) -> IssuedToken:
    """Create a token bound to ``bank`` (audited, actor ``created_by``).
    Returns the model and the secret, which is not recoverable afterwards.
    Raises ValueError for an unknown or empty scope list, an empty name or an
    expiry in the past."""
    scopes = sorted(set(scopes))
    valid = set(Scope.values)
    if not scopes or not set(scopes) <= valid:
        raise ValueError(f"scopes must be a non-empty subset of {sorted(valid)}, got {scopes}")
    if not name.strip():
        raise ValueError("a token needs a name")
    if expires_at is not None and expires_at <= timezone.now():
        raise ValueError("the expiry must be in the future")
    secret_part = secrets.token_urlsafe(32)
    raw = f"{TOKEN_PREFIX}{secret_part}"
    token = ApiToken.objects.create(
        bank=bank,
        name=name.strip(),
        prefix=raw[:12],
        token_hash=hash_token(raw),
        scopes=scopes,
        created_by=created_by,
        expires_at=expires_at,
    )
    audit_record(
        action="token.create",
        bank=bank,
        user=created_by,
        obj=token,
        after={"name": token.name, "prefix": token.prefix, "scopes": scopes, "expires_at": expires_at},
    )
    return IssuedToken(token=token, secret=raw)


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor=None) -> ApiToken:
    """Revoke ``token`` (idempotent: a revoked token keeps its first
    revocation time, and only the first revocation is audited)."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(
            action="token.revoke",
            bank=token.bank,
            user=actor,
            obj=token,
            before={"revoked_at": None},
            after={"revoked_at": token.revoked_at},
        )
    return token


LAST_USED_RESOLUTION_SECONDS = 60


def api_token_touch(*, token: ApiToken) -> None:
    """Record use, writing at most once a minute per token so the hot path
    stays cheap."""
    now = timezone.now()
    if token.last_used_at and (now - token.last_used_at).total_seconds() < LAST_USED_RESOLUTION_SECONDS:
        return
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    token.last_used_at = now


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    count: int
    limit: int  # 0: no limit
    retry_after: int  # seconds until the window ends


RATE_WINDOW_SECONDS = 60


def api_token_hit(*, token: ApiToken, limit: int, now: datetime | None = None) -> RateDecision:
    """Count one request of ``token`` in the current fixed one-minute window
    (one upsert, atomic under concurrency) and say whether it is within
    ``limit`` requests per minute (0 means unlimited). Requests over the
    limit are counted too, so request counts show what agents attempted."""
    now = now or timezone.now()
    epoch = int(now.timestamp())
    window_start_epoch = epoch - epoch % RATE_WINDOW_SECONDS
    window_start = datetime.fromtimestamp(window_start_epoch, tz=UTC)
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO accounts_tokenusage (token_id, window_start, count) VALUES (%s, %s, 1) "
            "ON CONFLICT (token_id, window_start) DO UPDATE SET count = accounts_tokenusage.count + 1 "
            "RETURNING count",
            [token.pk, window_start],
        )
        (count,) = cur.fetchone()
    retry_after = max(1, window_start_epoch + RATE_WINDOW_SECONDS - epoch)
    allowed = limit <= 0 or count <= limit
    return RateDecision(allowed=allowed, count=count, limit=limit, retry_after=retry_after)


USAGE_MINUTE_RETENTION_HOURS = 48


def token_usage_compact(*, older_than_hours: int = USAGE_MINUTE_RETENTION_HOURS) -> int:
    """Fold per-minute usage rows older than ``older_than_hours`` into one row
    per token per UTC day (the row at the day's first minute), so the table
    stays small while all-time request counts stay exact. The last 48 hours
    keep their minutes, which the rate limiter and the 24 h count read.
    One statement, so it is atomic and safe to run concurrently with
    ``api_token_hit`` and with itself; running it again changes nothing.
    Returns how many minute rows were folded away."""
    cutoff = timezone.now() - timedelta(hours=older_than_hours)
    with connection.cursor() as cur:
        cur.execute(
            """
            WITH folded AS (
                DELETE FROM accounts_tokenusage
                WHERE window_start < %s
                  AND window_start <> date_trunc('day', window_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                RETURNING token_id, date_trunc('day', window_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day, count
            ), per_day AS (
                SELECT token_id, day, sum(count) AS count, count(*) AS n FROM folded GROUP BY token_id, day
            ), upserted AS (
                INSERT INTO accounts_tokenusage (token_id, window_start, count)
                SELECT token_id, day, count FROM per_day
                ON CONFLICT (token_id, window_start) DO UPDATE SET count = accounts_tokenusage.count + EXCLUDED.count
                RETURNING 1
            )
            SELECT coalesce(sum(n), 0) FROM per_day
            """,
            [cutoff],
        )
        (folded,) = cur.fetchone()
    return int(folded)
